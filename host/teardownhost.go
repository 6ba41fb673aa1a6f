package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
)

// TeardownRequest is teardown-host's: the stack removed (Teardown) and, with PurgeIncus,
// the Incus package after it (PurgeIncus, the caller's to run once the steps are shown).
type TeardownRequest struct {
	TeardownOptions
	PurgeIncus bool
}

// NotSystemDaemonError: a purge asked of a daemon that is not the system's, at Socket.
type NotSystemDaemonError struct{ Socket string }

func (e *NotSystemDaemonError) Error() string {
	return fmt.Sprintf("--purge-incus: box talks to the daemon at %s, not the system's (%s)", e.Socket, SystemSocket)
}

// ForeignInstancesError: instances box did not mint would outlive a purge.
type ForeignInstancesError struct{ Names []string }

func (e *ForeignInstancesError) Error() string {
	return fmt.Sprintf("--purge-incus: instances box did not mint would remain (%s); nothing was removed", strings.Join(e.Names, ", "))
}

// TeardownHost runs r all or nothing: a purge's own preconditions (the system's daemon,
// no instance box did not mint) are checked before a box is deleted. The steps come
// back also when the teardown fails.
func TeardownHost(ctx context.Context, c *incus.Client, r TeardownRequest) ([]Step, error) {
	if r.PurgeIncus {
		if c.Socket() != SystemSocket {
			return nil, &NotSystemDaemonError{c.Socket()}
		}
		foreign, err := ForeignInstances(ctx, c)
		if err != nil {
			return nil, err
		}
		if len(foreign) > 0 {
			return nil, &ForeignInstancesError{foreign}
		}
	}
	return Teardown(ctx, c, r.TeardownOptions)
}
