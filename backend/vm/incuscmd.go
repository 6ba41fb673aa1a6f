package vm

// box incus, the escape hatch: the incus client itself, aimed at one box and pinned to
// the daemon and project box checked its tag on. Here is what it runs, and the run; the
// CLI prints the command and turns its exit into box's.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
)

// offStack are the words of incus arguments that can move a box off the isolation
// stack: box warns, then proceeds.
var offStack = []string{"profile", "network", "device", "nic"}

// Elsewhere returns the first argument that would aim incus at another project or
// remote, where the same name may be an instance box never minted: "" if none.
func Elsewhere(args []string) string {
	for _, a := range args {
		if a == "--project" || strings.HasPrefix(a, "--project=") || strings.Contains(a, ":{}") {
			return a
		}
	}
	return ""
}

// IncusArgs replaces {} with the instance name in each argument; with no {}, the name
// is appended (as upstream's escape hatch does).
func IncusArgs(name string, args []string) []string {
	out := make([]string, len(args))
	replaced := false
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{}", name)
		replaced = replaced || out[i] != a
	}
	if !replaced {
		out = append(out, name)
	}
	return out
}

// IncusRemote is the one remote of the incus configuration box runs incus with.
const IncusRemote = "box"

// PinnedIncusConfig is that configuration: box's own socket, in the project box
// checked, as the default remote. Nothing of the user's incus configuration (default
// remote, remotes' projects) can aim the client elsewhere.
func PinnedIncusConfig(socket, project string) string {
	if project == "" {
		project = "default"
	}
	return fmt.Sprintf("default-remote: %s\nremotes:\n  %s:\n    addr: %s\n    project: %s\n    protocol: incus\n    public: false\naliases: {}\n",
		IncusRemote, IncusRemote, strconv.Quote("unix://"+socket), strconv.Quote(project))
}

// PinnedIncusEnv is the incus client's environment: env without the variables that
// choose a daemon, a remote, a project or a configuration, then box's pins.
func PinnedIncusEnv(env []string, confDir, socket, project string) []string {
	if project == "" {
		project = "default"
	}
	out := make([]string, 0, len(env)+5)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "INCUS_CONF", "INCUS_GLOBAL_CONF", "INCUS_REMOTE", "INCUS_PROJECT", "INCUS_SOCKET", "INCUS_DIR":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "INCUS_CONF="+confDir, "INCUS_GLOBAL_CONF="+confDir, "INCUS_REMOTE="+IncusRemote, "INCUS_PROJECT="+project)
	if socket != "" { // "" for an HTTPS remote: the configuration names its address
		out = append(out, "INCUS_SOCKET="+socket)
	}
	return out
}

// OffStackWords lists the arguments that can move a box off the isolation stack.
func OffStackWords(args []string) []string {
	var hits []string
	for _, a := range args {
		l := strings.ToLower(a)
		if strings.Contains(l, "security.") {
			hits = append(hits, a)
			continue
		}
		for _, w := range offStack {
			if l == w || strings.TrimLeft(l, "-") == w || strings.HasPrefix(strings.TrimLeft(l, "-"), w+"=") {
				hits = append(hits, a)
				break
			}
		}
	}
	return hits
}

// Hatch is box incus's command on one box, its tag checked: the arguments, and where
// they go.
type Hatch struct {
	// Args are incus's arguments, the box's name in them.
	Args []string
	// Where and Project name the daemon and project, for the line box prints.
	Where, Project string
	// OffStack are the arguments that can move the box off the isolation stack.
	OffStack []string

	remote          *incus.Remote
	socket, project string
}

// Incus checks that name is a box on the daemon in force and builds the incus
// arguments aimed at it.
func (b Backend) Incus(name string, rest []string) (*Hatch, error) {
	ctx, stop := b.Context()
	c := b.Client()
	_, err := b.Resolve(ctx, c, name)
	c.Close()
	stop()
	if err != nil {
		return nil, err
	}
	args := IncusArgs(name, rest)
	return &Hatch{Args: args, Where: c.Where(), Project: ProjectOf(c), OffStack: OffStackWords(args),
		remote: c.Remote(), socket: c.Socket(), project: c.Project}, nil
}

// Pin writes the incus configuration that pins the client to the daemon and project
// the tag was checked on into a new directory (the caller removes it), and returns it
// with the client's environment (environ without what would aim it elsewhere).
func (h *Hatch) Pin(environ []string) (dir string, env []string, err error) {
	confDir, err := os.MkdirTemp("", "box-incus-")
	if err != nil {
		return "", nil, err
	}
	socket := ""
	if h.remote != nil {
		err = pinRemoteIncus(confDir, h.remote)
	} else if socket, err = filepath.Abs(h.socket); err == nil {
		err = os.WriteFile(filepath.Join(confDir, "config.yml"), []byte(PinnedIncusConfig(socket, h.project)), 0o600)
	}
	if err != nil {
		os.RemoveAll(confDir)
		return "", nil, err
	}
	return confDir, PinnedIncusEnv(environ, confDir, socket, h.project), nil
}

// ErrNoIncusClient: the incus client is not on PATH (box incus runs it).
var ErrNoIncusClient = errors.New("the incus client is not installed")

// LookIncus is the incus client on PATH, or ErrNoIncusClient.
func LookIncus() (string, error) {
	bin, err := exec.LookPath("incus")
	if err != nil {
		return "", ErrNoIncusClient
	}
	return bin, nil
}

// Run runs the incus client bin with h's arguments, pinned (Pin) to exactly the daemon
// and project the tag was checked on, on the given streams. incus's own exit is a
// *backend.ExitError (128+N when signal N ended it); a failure to run it says "run incus".
func (h *Hatch) Run(bin string, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	confDir, env, err := h.Pin(environ)
	if err != nil {
		return err
	}
	defer os.RemoveAll(confDir)
	cmd := exec.Command(bin, h.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = env
	// Ctrl-C reaches incus (same process group); box waits for it to finish. (Caught,
	// not ignored: an ignored signal would stay ignored in incus.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ee):
		return fmt.Errorf("run incus: %w", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &backend.ExitError{Code: 128 + int(ws.Signal())}
	}
	return &backend.ExitError{Code: ee.ExitCode()}
}
