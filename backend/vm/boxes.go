// The vm verbs' shared logic (formerly package boxes): the tag boundary (resolve a name
// to a box, refuse anything box did not mint), the mint plan (resource precedence, the
// placement profile), how a box is entered as its stamped user, and the summaries
// `box list` and `box info` print.
//
// Everything here but Resolve and ResolveFull is pure.

package vm

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
)

// NotBoxError is the answer to any verb aimed at an instance that carries neither
// user.box=1 nor the legacy user.claudebox=1.
type NotBoxError struct{ Name string }

func (e *NotBoxError) Error() string {
	return fmt.Sprintf("instance %q is not a box: box never touches an instance it did not mint", e.Name)
}

// Hint says how to act on it anyway: with incus itself, deliberately.
func (e *NotBoxError) Hint() string {
	return fmt.Sprintf("boxes are tagged user.box=1 (or user.claudebox=1); to act on %q, use incus directly", e.Name)
}

// NotFoundError is the answer for a name no instance has.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string        { return fmt.Sprintf("no box named %q", e.Name) }
func (e *NotFoundError) Is(target error) bool { return target == backend.ErrNotFound }

// Resolve validates name, fetches the instance and enforces the tag boundary. It
// changes nothing. The ETag comes back for a conditional write.
func Resolve(ctx context.Context, c *incus.Client, name string) (*incus.Instance, error) {
	if err := incus.ValidateName(name); err != nil {
		return nil, err
	}
	inst, _, err := c.Instance(ctx, name)
	if err != nil {
		if incus.IsNotFound(err) {
			return nil, &NotFoundError{name}
		}
		return nil, err
	}
	if !incus.IsBox(*inst) {
		return nil, &NotBoxError{name}
	}
	return inst, nil
}

// ResolveFull is Resolve answered with the box's state and snapshots in the same
// request (what `box info` shows).
func ResolveFull(ctx context.Context, c *incus.Client, name string) (*incus.InstanceFull, error) {
	if err := incus.ValidateName(name); err != nil {
		return nil, err
	}
	inst, err := c.InstanceFull(ctx, name)
	if err != nil {
		if incus.IsNotFound(err) {
			return nil, &NotFoundError{name}
		}
		return nil, err
	}
	if !incus.IsBox(inst.Instance) {
		return nil, &NotBoxError{name}
	}
	return inst, nil
}

// Summary is what `box list` shows of a box, and the head of `box info`.
type Summary struct {
	Name       string
	State      string // Running, Stopped, ...
	Type       string // virtual-machine, container
	IPv4       string // eth0's address when running, else ""
	Template   string
	User       string // the account box enters it as
	Origin     string // mint, clone; "" for a legacy box
	OriginFrom string // the clone's source (box or box/snapshot)
	Created    time.Time
	Legacy     bool   // minted by claudebox (user.claudebox=1 without user.box=1)
	Location   string // the cluster member it lives on ("" off a cluster)
}

// Summarize reads a box's stamp. st may be nil (a stopped box has no address).
func Summarize(inst incus.Instance, st *incus.InstanceState) Summary {
	s := Summary{
		Name:       inst.Name,
		State:      inst.Status,
		Type:       inst.Type,
		Template:   inst.Config[incus.KeyTemplate],
		User:       incus.UserOf(inst),
		Origin:     inst.Config[incus.KeyOrigin],
		OriginFrom: inst.Config[incus.KeyOriginFrom],
		Created:    inst.CreatedAt.UTC(),
		Legacy:     inst.Config[incus.KeyBox] != "1" && inst.Config[incus.KeyLegacy] == "1",
	}
	if inst.Location != "none" { // what a server off a cluster answers
		s.Location = inst.Location
	}
	if t, err := time.Parse(time.RFC3339, inst.Config[incus.KeyCreated]); err == nil {
		s.Created = t.UTC()
	}
	if s.Legacy && s.Template == "" {
		s.Template = "claude"
	}
	if st != nil {
		s.IPv4 = st.IPv4(Iface)
		if st.Status != "" {
			s.State = st.Status
		}
	}
	return s
}

// Iface is the NIC the placement profile gives every box.
const Iface = "eth0"

// SortSummaries orders by name, as `box list` prints.
func SortSummaries(s []Summary) {
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
}

// SameInstance reports whether after is the very instance before was: the same
// volatile.uuid (Incus gives every instance its own, kept across rename, new for a copy)
// and creation time. A name alone is not an identity: between a question and the
// answer, a box may be renamed and another instance take its name.
func SameInstance(before, after incus.Instance) bool {
	return before.Config[KeyUUID] == after.Config[KeyUUID] && before.CreatedAt.Equal(after.CreatedAt)
}

// KeyUUID is the instance's own UUID, set by Incus at creation.
const KeyUUID = "volatile.uuid"
