package drill

// The vm drill's orchestration that runs box itself: its boxes are minted by 'box new',
// its verbs probe run the box binary, and each grant's tenant is probed through
// incus-user (box drill --backend vm; the CLI only renders).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/pty"
	"golang.org/x/sys/unix"
)

// MintByVerb mints a drill box by running 'box new' itself: the boxes the drill probes
// are made exactly as the user's are (template, placement profile, machine ID, launch
// checks), as containers, without the pristine snapshot.
func MintByVerb(run VerbRunner, template string) func(ctx context.Context, name string) error {
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

// BinaryRunner runs the box binary exe with args in environ, stdin and stdout on a fresh
// pseudo-terminal when tty is set (box shell wants one before anything else; "exit" is
// typed every half second, so a shell that was let in ends), stderr captured.
func BinaryRunner(exe string, environ []string) VerbRunner {
	return func(ctx context.Context, args []string, tty bool) VerbOutcome {
		out := VerbOutcome{Args: args}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Args[0] = "box"
		cmd.Env = append(slices.Clone(environ), vm.EnvSnapshotPristine+"=0")
		cmd.WaitDelay = 5 * time.Second
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		var master, slave *os.File
		var drained chan struct{}
		if tty {
			var err error
			master, slave, err = pty.Open()
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
			drained = make(chan struct{})
			go func() { // drain what a shell prints, so it never blocks on a full pty
				defer close(drained)
				buf := make([]byte, 4096)
				for {
					n, err := master.Read(buf)
					if len(out.Terminal) < termShown {
						out.Terminal = append(out.Terminal, buf[:min(n, termShown-len(out.Terminal))]...)
					}
					if err != nil {
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
		if drained != nil {
			// box has ended: with the slave closed, the master gives what it still holds,
			// then EIO (the deadline only bounds the unexpected).
			slave.Close()
			master.SetReadDeadline(time.Now().Add(5 * time.Second))
			<-drained
		}
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

// termShown bounds what BinaryRunner keeps of a verb's terminal.
const termShown = 64 << 10

// GrantRows are the vm drill's rows for every user holding a grant: what an
// attacker in that account would ask incusd, asked through incus-user as that user
// (RunGrant). A revoked grant has no way in, and no rows.
func GrantRows(ctx context.Context, g host.GrantHost) []Result {
	gap, err := host.DetectPortNameGap()
	gap = gap || err != nil // an error reads as the weaker case
	placement, c := g.Placement, g.Client
	var rows []Result
	err = g.EachGrantTenant(ctx, func(t host.GrantTenant) {
		tenant := incus.NewDial(t.Socket, t.Dial)
		tenant.Project = t.Project
		rows = append(rows, RunGrant(ctx, GrantOptions{Admin: c, Tenant: tenant, User: t.User,
			Project: t.Project, Bridge: t.Bridge, Profile: placement, Other: t.Other, PortNameGap: gap})...)
		tenant.Close()
	})
	if err != nil {
		return []Result{{ID: "grant", Group: "grant", Probe: "the grants of this host", Targets: []string{},
			Expected: "listed", Observed: "error: " + err.Error(), Status: Error}}
	}
	return rows
}
