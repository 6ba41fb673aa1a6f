package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/pty"
	"github.com/heavy-duty/box/templates"
	"golang.org/x/sys/unix"
)

// runDrillVM is box drill --backend vm: the stack row by row, then two boxes probed live.
func runDrillVM(e *env, o *drillOptions) error {
	ctx, cancel := hostContext()
	defer cancel()
	c := hostClient(e)
	defer c.Close()
	ports := drill.HostListening()
	if o.hostPort != 0 {
		ports = []int{o.hostPort}
	}
	for _, t := range o.lan {
		if _, _, err := net.SplitHostPort(t); err != nil {
			return usagef("for example --lan 192.168.1.10:80", "--lan %q: want ADDR:PORT", t)
		}
	}
	// The verbs row runs this very binary, as a user would, against the same incusd.
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("locating the box binary for the verbs probe: %w", err)
	}
	tmpl, err := drillTemplate(e, o)
	if err != nil {
		return err
	}
	run := verbRunner(exe, e.environ())
	results, err := drill.RunVM(ctx, drill.VMOptions{
		Client: c, Image: tmpl.Image, UnitDir: o.unitDir, InternetURL: o.internetURL,
		Mint: drillMint(run, tmpl.Name), Profile: vm.Placement(e.getenv),
		HostPorts: ports, LAN: o.lan, Verbs: run,
		Logf: func(f string, a ...any) { fmt.Fprintf(e.stderr, "box: "+f+"\n", a...) },
	})
	if err != nil && len(results) == 0 {
		return hostErr(c, err)
	}
	if c.RemoteName() == "" {
		results = append(results, grantDrillRows(ctx, e, c)...) // grantdrill.go
	}
	if o.json {
		err2 := drill.RenderJSON(e.stdout, results)
		if err == nil {
			err = err2
		}
	} else if err2 := drill.Render(e.stdout, results); err == nil {
		err = err2
	}
	if err != nil {
		return hostErr(c, err)
	}
	what := "vm, template " + tmpl.Name + " (image " + tmpl.Image + "), host ports " + fmt.Sprint(ports)
	if drill.Failed(results) {
		return fmt.Errorf("drill (%s): %s", what, drill.Summary(results))
	}
	fmt.Fprintf(e.stderr, "box: drill (%s): %s\n", what, drill.Summary(results))
	return nil
}

// drillTemplate loads the template the drill's boxes are minted from (--template, else
// box new's default) and checks, as box new would, that it can mint one.
func drillTemplate(e *env, o *drillOptions) (*templates.Template, error) {
	if o.image != "" {
		return nil, usagef("name a template whose BOX_IMAGE is that image: box drill --backend vm --template NAME",
			"--image is gone: the vm drill mints its boxes from a template, as box new does")
	}
	name := vm.TemplateName(o.template, nil)
	tmpl, err := templates.Load(name, templates.Dir(e.configHome()))
	if err != nil {
		if errors.Is(err, templates.ErrNotFound) || templates.ValidName(name) != nil {
			return nil, usagef("run 'box templates' to list them", "%s", err)
		}
		return nil, err
	}
	// The drill's boxes are containers (they are probed through exec either way).
	if _, err := vm.MintPlan(vm.NewOptions{Name: "drill", Container: true}, nil, tmpl, vm.Placement(e.getenv), "", time.Now()); err != nil {
		return nil, vmErr(e, err)
	}
	return tmpl, nil
}

// drillMint mints a drill box by running 'box new' itself: the boxes the drill probes
// are made exactly as the user's are (template, placement profile, machine ID, launch
// checks), as containers, without the pristine snapshot.
func drillMint(run drill.VerbRunner, template string) func(ctx context.Context, name string) error {
	return func(ctx context.Context, name string) error {
		out := run(ctx, []string{"new", "--name", name, "--template", template, "--container", "--timeout", "5m", "--quiet"}, false)
		switch {
		case out.Err != nil:
			return fmt.Errorf("box new --name %s: %w", name, out.Err)
		case out.Code != 0:
			return fmt.Errorf("box new --name %s --template %s: exit %d: %s", name, template, out.Code, strings.TrimSpace(out.Stderr))
		}
		return nil
	}
}

// verbRunner runs the box binary exe with args in environ, stdin and stdout on a fresh
// pseudo-terminal when tty is set (box shell wants one before anything else; "exit" is
// typed every half second, so a shell that was let in ends), stderr captured.
func verbRunner(exe string, environ []string) drill.VerbRunner {
	return func(ctx context.Context, args []string, tty bool) drill.VerbOutcome {
		out := drill.VerbOutcome{Args: args}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Args[0] = "box"
		cmd.Env = append(slices.Clone(environ), vm.EnvSnapshotPristine+"=0")
		cmd.WaitDelay = 5 * time.Second
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if tty {
			master, slave, err := pty.Open()
			if err != nil {
				out.Err = err
				return out
			}
			defer master.Close()
			defer slave.Close()
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
			cmd.Stdin, cmd.Stdout = slave, slave
			stop := make(chan struct{})
			defer close(stop)
			go func() { // drain what a shell prints, so it never blocks on a full pty
				buf := make([]byte, 4096)
				for {
					if _, err := master.Read(buf); err != nil {
						return
					}
				}
			}()
			go func() {
				t := time.NewTicker(500 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						_, _ = master.Write([]byte("exit\r"))
					}
				}
			}()
		}
		err := cmd.Run()
		out.Stderr = stderr.String()
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
			out.Err = fmt.Errorf("still running after its time-out: killed")
		case errors.As(err, &ee):
			out.Code = ee.ExitCode()
		case err != nil:
			out.Err = err
		}
		return out
	}
}
