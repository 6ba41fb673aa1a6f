package backend

import (
	"errors"
	"strings"

	"github.com/heavy-duty/box/internal/closest"
	"github.com/heavy-duty/box/profiles"
)

// Lookup finds the backend that holds a box name, the same way on every verb: a box
// found in the local store comes held (the verb does not look it up again); otherwise it
// is the registry's answer once the vm side has said it has the name, and a name no
// backend has is the NoBox refusal. The caller supplies the host facts as functions, so
// nothing is asked that the answer does not need.
type Lookup struct {
	Registry Registry
	// Remote: a remote holds vm boxes only, and answers for its names itself.
	Remote bool
	// Held is the local (bwrap) backend holding the box name, nil when its store has no
	// such name, or an error for a directory that merely looks like a box.
	Held func(name string) (Backend, error)
	// IncusAbsent reports whether the local incusd's socket is missing, and if so
	// whether Incus is installed (stopped) rather than never installed.
	IncusAbsent func() (absent, installed bool)
	// VMTaken asks incusd whether it has an instance called name.
	VMTaken func(name string) (bool, error)
	// Listing is the registry whose boxes' names the NoBox refusal offers (its backends
	// quiet: their warnings are for box list).
	Listing Registry
}

// NoBox is the refusal for a name no backend has, with the closest names of the boxes
// Listing's backends list; vmErr is why incusd could not be asked (nil when it
// answered), and then the vm backend is not asked again.
func (l Lookup) NoBox(name string, vmErr error) *NoBoxError {
	var names []string
	for _, b := range l.Listing.All() {
		if vmErr != nil && b.Kind() == profiles.BackendVM {
			continue
		}
		list, _ := b.List() // a backend that cannot list offers no names
		for _, s := range list {
			names = append(names, s.Name)
		}
	}
	return NoBox(name, vmErr, names)
}

// For is the backend that holds name. Without askVM the vm backend is not asked
// whether it has the name first: the verb's own single request answers that (box
// info: one request, issue 26), and its not-found becomes the same refusal.
func (l Lookup) For(name string, askVM bool) (Backend, error) {
	b, err := l.Held(name)
	if err == nil && b != nil {
		return b, nil
	}
	if err != nil || l.Remote || ValidName(name) != nil {
		return l.Registry.For(name) // a lookalike directory, a remote, a bad name: their own words
	}
	// Not a bwrap box: a vm box, or no box at all, said the same way on every verb. With
	// Incus installed but stopped, box cannot tell: the vm verb goes on, checks its
	// arguments and says Incus is not running; unless the name is close to a local
	// box's, most likely a typo of it (field review, session 16: box said Incus was not
	// running to an operator of bwrap boxes only).
	if absent, installed := l.IncusAbsent(); absent && installed {
		if err := l.stopped(name); err != nil {
			return nil, err
		}
		return l.Registry.For(name)
	}
	if !askVM {
		if absent, installed := l.IncusAbsent(); absent && !installed {
			return nil, l.NoBox(name, nil) // Incus never installed: no vm box to ask about
		}
		return l.Registry.For(name)
	}
	taken, vmErr := l.VMTaken(name)
	if vmErr != nil || !taken {
		return nil, l.NoBox(name, vmErr)
	}
	return l.Registry.For(name)
}

// Info is box info's one request: the backend holding name, without asking incusd
// first (issue 26), then its answer; the vm backend's not-found becomes the NoBox
// refusal every verb gives.
func (l Lookup) Info(name string) (Info, error) {
	b, err := l.For(name, false)
	if err != nil {
		return Info{}, err
	}
	info, err := b.Info(name)
	if errors.Is(err, ErrNotFound) && b.Kind() == profiles.BackendVM {
		return info, l.NoBox(name, nil)
	}
	return info, err
}

// Source refuses a clone's source (box new --from) that is no box, with the NoBox
// refusal (the caller names the flag); a remote's names are the remote's to answer.
func (l Lookup) Source(name string) error {
	if l.Remote || ValidName(name) != nil {
		return nil
	}
	if absent, installed := l.IncusAbsent(); absent && installed {
		// incusd stopped: the vm verb says so in its turn, after its usage checks; a
		// typo of a local box's name is said now.
		return l.stopped(name)
	}
	taken, vmErr := l.VMTaken(name)
	if vmErr == nil && taken {
		return nil
	}
	return l.NoBox(name, vmErr)
}

// stopped is the answer for name while Incus is installed but stopped: the NoBox
// refusal when name is one edit away from a local box's (the vm boxes could not be
// asked: ErrIncusStopped), else nil, and the vm backend has the name. One edit, not
// Closest's bound: a vm box's short name is within two edits of many a name.
func (l Lookup) stopped(name string) error {
	nb := l.NoBox(name, ErrIncusStopped)
	for _, c := range nb.Closest {
		if closest.Distance(strings.ToLower(name), strings.ToLower(c)) <= 1 {
			return nb
		}
	}
	return nil
}
