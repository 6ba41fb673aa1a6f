package vm

import (
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

// TestSharedIDs: a container whose security.idmap.isolated is not true as Incus reads
// it (or is unset) is on the shared range; a VM takes no idmap.
func TestSharedIDs(t *testing.T) {
	for _, c := range []struct {
		typ, key string
		set      bool
		want     bool
	}{
		{incus.TypeContainer, "", false, true},
		{incus.TypeContainer, "false", true, true},
		{incus.TypeContainer, "no", true, true},
		{incus.TypeContainer, "1", true, false},
		{incus.TypeContainer, "On", true, false},
		{incus.TypeContainer, "true", true, false},
		{incus.TypeVM, "", false, false},
	} {
		inst := incus.Instance{Type: c.typ, Config: map[string]string{}}
		if c.set {
			inst.Config[incus.KeyIsolatedIDs] = c.key
		}
		if got := SharedIDs(inst); got != c.want {
			t.Errorf("%s with %s=%q (set %v): SharedIDs %v, want %v", c.typ, incus.KeyIsolatedIDs, c.key, c.set, got, c.want)
		}
	}
}
