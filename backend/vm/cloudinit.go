package vm

// The cloud-init step of a launch: it waits for the box's cloud-init to finish and
// refuses to hand over a box whose cloud-init failed or did not finish in time.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

// CloudInitLog is the log whose error lines a failure report quotes.
const CloudInitLog = "/var/log/cloud-init-output.log"

// ProvisionError is a box whose cloud-init failed or did not finish within the launch's
// time-box. The box is kept, stopped, under its name, for inspection: a failed
// provisioning is usually explained by the box's own log, and deleting the box would
// delete the explanation. It is never handed over: box new exits 1.
type ProvisionError struct {
	Box     string
	Timeout time.Duration // non-zero: the time-box ran out while cloud-init ran
	Report  string        // cloud-init's own report and the log's error lines
	Stopped bool          // box could stop it
}

func (e *ProvisionError) Error() string {
	what := "cloud-init failed in box " + fmt.Sprintf("%q", e.Box)
	if e.Timeout > 0 {
		what = fmt.Sprintf("cloud-init did not finish in box %q within %s", e.Box, e.Timeout)
	}
	state := "it is kept, stopped, for inspection"
	if !e.Stopped {
		state = "it is kept for inspection (it could not be stopped)"
	}
	msg := what + ": the box is incomplete, so it is not handed over; " + state
	if e.Report != "" {
		msg += "\n" + indent(e.Report)
	}
	return msg
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// errNoCloudInit: the image has no cloud-init, so a template's user-data cannot take
// effect.
var errNoCloudInit = errors.New("no cloud-init in the image")

// Provision waits for cloud-init in a box that has user-data, within ctx (the launch's
// time-box). On failure or time-out it stops the box, keeps it, and returns a
// *ProvisionError; an interruption (Ctrl-C) is returned as it is, for the caller to
// clean up. An image without cloud-init cannot apply the user-data: that is said on
// stderr, by name, and the box is handed over (a template naming a plain image is the
// operator's choice; box never pretends the user-data ran).
func Provision(ctx context.Context, c *incus.Client, name string, timeout time.Duration, r Reporter) error {
	report, err := waitCloudInit(ctx, c, name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNoCloudInit):
		r.Warn("the image of box %s has no cloud-init: the template's user-data was not applied", name)
		return nil
	case errors.Is(err, context.Canceled):
		return err
	}
	pe := &ProvisionError{Box: name, Report: report}
	if errors.Is(err, context.DeadlineExceeded) {
		pe.Timeout = timeout
	} else if report == "" {
		pe.Report = err.Error()
	}
	// The launch's context may be over: report and stop with a deadline of their own.
	sctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if pe.Timeout == 0 {
		if lines := logTail(sctx, c, name); lines != "" {
			pe.Report = strings.TrimSpace(pe.Report) + "\nthe end of " + CloudInitLog + ":\n" + lines
		}
	}
	pe.Stopped = c.Stop(sctx, name, 0, true) == nil
	return pe
}

// waitCloudInit runs `cloud-init status --wait --long` in the box and returns its
// report. nil: done (exit 0, or 2: done with recoverable errors). A VM whose agent is
// not up yet is asked again; an image without cloud-init (exit 127) is errNoCloudInit.
func waitCloudInit(ctx context.Context, c *incus.Client, name string) (string, error) {
	for {
		var out bytes.Buffer
		code, err := c.Exec(ctx, name, incus.Exec{Command: []string{"cloud-init", "status", "--wait", "--long"}, Stdout: &out, Stderr: &out})
		report := cloudInitReport(out.String())
		switch {
		case ctx.Err() != nil:
			return report, ctx.Err()
		case code == 127: // incusd answers "Command not found" with 127
			return "", errNoCloudInit
		case errors.Is(err, incus.ErrAgentNotRunning):
			select {
			case <-ctx.Done():
				return report, ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
			continue
		case err != nil:
			return report, err
		case code == 0, code == 2:
			return report, nil
		}
		return report, fmt.Errorf("cloud-init status: exit %d", code)
	}
}

// cloudInitReport drops the progress dots `status --wait` prints before its report.
func cloudInitReport(s string) string {
	return strings.TrimSpace(strings.TrimLeft(s, ".\n"))
}

// logTail returns the end of the box's cloud-init output log (where the failing
// command's own output is), "" when it cannot be read.
func logTail(ctx context.Context, c *incus.Client, name string) string {
	var out bytes.Buffer
	if code, err := c.Exec(ctx, name, incus.Exec{Command: []string{"tail", "-n", "12", CloudInitLog}, Stdout: &out}); err != nil || code != 0 {
		return ""
	}
	return strings.TrimSpace(out.String())
}
