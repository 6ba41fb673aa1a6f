package vm

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
)

// Exec is box exec for a vm box: the command as the box's user, its exit code box's.
func (b Backend) Exec(name string, command []string, l backend.LaunchRequest) error {
	if err := refuseLaunch(name, l); err != nil {
		return err
	}
	ctx := context.Background()
	c := b.Client()
	defer c.Close()
	inst, err := b.runningBox(ctx, c, name)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	fwd := make(chan syscall.Signal, 4)
	go func() {
		for s := range sigs {
			fwd <- s.(syscall.Signal)
		}
	}()
	code, err := c.Exec(ctx, name, incus.Exec{
		Command: EntryCommand(incus.UserOf(*inst), false, command),
		Stdin:   b.Stdin, Stdout: terminalOut(b.Stdout), Stderr: terminalOut(b.Stderr),
		Signal: fwd,
	})
	return b.execResult(code, err)
}

// execResult maps an exec's outcome to box's: the command's own exit code. Incus
// reports exit code 127 as an error ("Command not found"): the entry shell ran, the
// command did not, and the shell said so on stderr; 127 is passed on like any code.
func (b Backend) execResult(code int, err error) error {
	if err != nil && code != 127 {
		return b.err(err)
	}
	if code != 0 {
		return &backend.ExitError{Code: code}
	}
	return nil
}

// runningBox resolves a box that must be running to be entered.
func (b Backend) runningBox(ctx context.Context, c *incus.Client, name string) (*incus.Instance, error) {
	inst, err := b.Resolve(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if !inst.Running() {
		return nil, &backend.StoppedError{Name: name, State: strings.ToLower(inst.Status)}
	}
	b.warnSharedIDs(name, inst)
	return inst, nil
}
