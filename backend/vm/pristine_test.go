package vm

import (
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/errs"
)

// The pristine snapshot: taken except on a dir pool (a full copy of the disk there),
// unless asked for by name; a bad setting is a usage error naming the choices.
func TestPristinePolicy(t *testing.T) {
	for _, c := range []struct {
		setting, driver string
		take            bool
	}{
		{"", "zfs", true}, {"", "btrfs", true}, {"", "", true}, {"", "dir", false},
		{"1", "dir", true}, {"0", "zfs", false},
	} {
		take, why, err := PristinePolicy(c.setting, c.driver)
		if err != nil || take != c.take || (!take && why == "") {
			t.Errorf("%q on %q: take %v, why %q, err %v; want take %v with a reason when not", c.setting, c.driver, take, why, err, c.take)
		}
	}
	if _, _, err := PristinePolicy("yes", "zfs"); err == nil || !errs.IsUsage(err) || !strings.Contains(err.Error(), EnvSnapshotPristine) {
		t.Errorf("a bad setting: %v", err)
	}
}

// A kept box says why it was kept; how to inspect or remove it is the CLI's hint
// (cmd/box's TestRefusalHints).
func TestKeptBoxErrors(t *testing.T) {
	pe := &ProvisionError{Box: "w", Timeout: time.Minute, Stopped: true}
	if !strings.Contains(pe.Error(), `did not finish in box "w" within 1m0s`) {
		t.Errorf("%v", pe)
	}
	le := &LeaseError{Box: "w", Iface: "eth0", Timeout: time.Minute}
	if !strings.Contains(le.Error(), "no IPv4 lease on eth0") {
		t.Errorf("%v", le)
	}
}
