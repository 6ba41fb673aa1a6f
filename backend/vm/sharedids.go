package vm

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
)

// SharedIDsError: container box Name runs on the host uid range Incus gives every
// container without security.idmap.isolated (a box minted before box set it, a legacy
// claudebox one, or one whose key was changed): to the host kernel its root is every
// such box's root (the drill's sibling:* rows). Not a refusal: the verbs that run the box
// say it aloud each time, and the CLI words the fix.
type SharedIDsError struct{ Name string }

func (e *SharedIDsError) Error() string {
	return fmt.Sprintf("box %s shares one host uid range with other container boxes: to the host kernel their roots are one user (one file and process owner, one count of fds in flight)", e.Name)
}

// SharedIDs reports whether inst is a container on the shared host uid range: the key
// is not true as Incus reads a boolean (true, 1, yes, on; any case).
func SharedIDs(inst incus.Instance) bool {
	switch strings.ToLower(inst.Config[incus.KeyIsolatedIDs]) {
	case "true", "1", "yes", "on":
		return false
	}
	return inst.Type == incus.TypeContainer
}

// warnSharedIDs names box name when its instance is on the shared range.
func (b Backend) warnSharedIDs(name string, inst *incus.Instance) {
	if SharedIDs(*inst) && b.Warn != nil {
		b.Warn(&SharedIDsError{Name: name})
	}
}
