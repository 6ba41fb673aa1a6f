package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/heavy-duty/box/backend/incus"
)

// SetupRequest is setup-host's: the stack built (Setup), or with FirewallOnly the host
// firewall alone re-applied (ReapplyFirewall, what the boot unit runs), planned from
// Gateway, else from the bridge's address as incusd has it.
type SetupRequest struct {
	SetupOptions
	FirewallOnly bool
	Gateway      string
}

// ErrNotRoot: setup-host on this machine's own stack, not as root.
var ErrNotRoot = errors.New("box setup-host changes this machine's network, firewall and Incus: it runs as root")

// CheckRoot refuses to set up this machine's stack (remote "": no remote in force)
// unless euid is root's; a remote's stack is built through its incusd.
func CheckRoot(remote string, euid int) error {
	if remote == "" && euid != 0 {
		return ErrNotRoot
	}
	return nil
}

// SetupHost runs r. The steps it took come back also when it fails.
func SetupHost(ctx context.Context, c *incus.Client, r SetupRequest) ([]Step, error) {
	if r.FirewallOnly {
		return ReapplyFirewall(ctx, c, r.Bridge, r.Gateway)
	}
	return Setup(ctx, c, r.SetupOptions)
}

// Tally counts the steps by outcome (a step without one is not counted).
func Tally(steps []Step) map[Outcome]int {
	n := map[Outcome]int{}
	for _, s := range steps {
		if s.Outcome != "" {
			n[s.Outcome]++
		}
	}
	return n
}

// Exe is the running box binary, its symlinks resolved: what the boot unit runs, and
// what doctor compares the unit with ("" when unknown: no comparison).
func Exe() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		return r
	}
	return exe
}
