package boxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
)

// VMRig runs the built box against the lab.
type VMRig struct {
	T      *testing.T
	Lab    *incuslab.Lab
	Box    string
	Home   string
	Tmpls  string // the user template directory
	Env    []string
	Ctx    context.Context
	Client *incus.Client
}

const LabBoxEnv = `BOX_DESCRIPTION="the lab's blank: a bookworm container image, no cloud-init"
BOX_IMAGE="box-test/bookworm"
BOX_USER="dev"
BOX_CPU="1"
BOX_MEMORY="512MiB"
BOX_DISK="2GiB"
`

const LabUserData = "#cloud-config\n# passed to Incus verbatim\nusers:\n  - name: dev\n"

func NewVMRig(t *testing.T) *VMRig { return NewVMRigOn(t, incuslab.Start(t)) }

// NewVMRigOn is NewVMRig on a lab the caller started.
func NewVMRigOn(t *testing.T, lab *incuslab.Lab) *VMRig {
	r := &VMRig{T: t, Lab: lab, Box: Binary(t), Home: t.TempDir(), Client: lab.Client}
	var cancel context.CancelFunc
	// A bound on a hung daemon for the whole test, not a time the test must keep: the vm
	// live tests run side by side, and a loaded machine has taken over 10 minutes for
	// one (TestVMBugsLive); go test's -timeout is the bound on everything.
	r.Ctx, cancel = context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	r.Tmpls = filepath.Join(r.Home, ".config", "box", "templates")
	r.WriteFile(filepath.Join(r.Tmpls, "blank", "box.env"), LabBoxEnv)
	r.WriteFile(filepath.Join(r.Tmpls, "blank", "user-data.yaml"), LabUserData)
	r.WriteFile(filepath.Join(r.Tmpls, "leaky", "box.env"), LabBoxEnv+"BOX_NETWORK=\"lan\"\n")
	r.WriteFile(filepath.Join(r.Home, ".config", "box", "profiles", "small.toml"),
		"backend = \"vm\"\ntemplate = \"blank\"\nmemory = \"768MiB\"\n")
	r.Env = append([]string{
		"HOME=" + r.Home, "XDG_CONFIG_HOME=" + filepath.Join(r.Home, ".config"),
		"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm", "LANG=C.UTF-8",
		"BOX_PLACEMENT_PROFILE=" + incuslab.Profile,
	}, lab.Env()...)
	return r
}

func (r *VMRig) WriteFile(path, content string) {
	r.T.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		r.T.Fatal(err)
	}
}

// Run runs box with args (and stdin) and returns what it did.
func (r *VMRig) Run(t *testing.T, stdin string, args ...string) Result {
	t.Helper()
	c := exec.Command(r.Box, args...)
	c.Env = r.Env
	c.Dir = r.Home
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	start := time.Now()
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("box %v: %v", args, err)
	}
	t.Logf("box %s: exit %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	return Result{code, o.String(), e.String()}
}

// OK runs box and requires exit 0.
func (r *VMRig) OK(t *testing.T, args ...string) Result {
	t.Helper()
	res := r.Run(t, "", args...)
	if res.Code != 0 {
		t.Fatalf("box %v: exit %d\nstdout: %s\nstderr: %s", args, res.Code, res.Stdout, res.Stderr)
	}
	return res
}

// Fails runs box and requires exit code want with stderr matching each of msgs.
func (r *VMRig) Fails(t *testing.T, want int, msgs []string, args ...string) Result {
	t.Helper()
	res := r.Run(t, "", args...)
	if res.Code != want {
		t.Errorf("box %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, res.Code, want, res.Stdout, res.Stderr)
	}
	for _, m := range msgs {
		if !strings.Contains(res.Stderr, m) {
			t.Errorf("box %v: stderr lacks %q:\n%s", args, m, res.Stderr)
		}
	}
	return res
}

// Raw creates an instance the way a user of incus would, not through box.
func (r *VMRig) Raw(name string, config map[string]string) {
	r.T.Helper()
	req := incus.InstancesPost{Name: name, Type: incus.TypeContainer,
		Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
		Profiles: []string{incuslab.Profile}, Config: config}
	if err := r.Client.Create(r.Ctx, req); err != nil {
		r.T.Fatal(err)
	}
	if err := r.Client.Start(r.Ctx, name); err != nil {
		r.T.Fatal(err)
	}
}

// RootExec runs a command as root in an instance through the client (a stand-in for
// what cloud-init would have done in an image that has it).
func (r *VMRig) RootExec(name string, cmd ...string) string {
	r.T.Helper()
	var out bytes.Buffer
	code, err := r.Client.Exec(r.Ctx, name, incus.Exec{Command: cmd, Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		r.T.Fatalf("exec %v in %s: exit %d, %v: %s", cmd, name, code, err, out.String())
	}
	return out.String()
}

func (r *VMRig) Info(t *testing.T, name string) InfoJSON {
	t.Helper()
	res := r.OK(t, "info", name, "--json")
	var info InfoJSON
	if err := json.Unmarshal([]byte(res.Stdout), &info); err != nil {
		t.Fatalf("box info --json: %v\n%s", err, res.Stdout)
	}
	return info
}

func (r *VMRig) Exists(name string) bool {
	_, _, err := r.Client.Instance(r.Ctx, name)
	if err != nil && !incus.IsNotFound(err) {
		r.T.Fatal(err)
	}
	return err == nil
}

// Frozen is what must not change about an instance box refuses.
type Frozen struct {
	Config    map[string]string
	Devices   map[string]map[string]string
	Profiles  []string
	Status    string
	Snapshots int
	Pid       int64
}

func (r *VMRig) Freeze(name string) Frozen {
	r.T.Helper()
	inst, _, err := r.Client.Instance(r.Ctx, name)
	if err != nil {
		r.T.Fatal(err)
	}
	st, err := r.Client.State(r.Ctx, name)
	if err != nil {
		r.T.Fatal(err)
	}
	snaps, err := r.Client.Snapshots(r.Ctx, name)
	if err != nil {
		r.T.Fatal(err)
	}
	return Frozen{inst.Config, inst.Devices, inst.Profiles, inst.Status, len(snaps), st.Pid}
}
