package backend

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
)

// NewChoice is what box new's backend is decided from: the request, the remote in force
// ("" for the local daemon) and the lookups the decision makes, asked only as needed.
type NewChoice struct {
	Backend, From, Profile, Name, Remote string
	// BwrapBox: is there a bwrap box called name (an error for a lookalike directory)?
	BwrapBox func(name string) (bool, error)
	// VMSource refuses a clone's source that is no box.
	VMSource func(name string) error
	// ProfileBackend is the backend of the profile called name.
	ProfileBackend func(name string) (string, error)
	// BwrapTaken: does the bwrap store have anything called name?
	BwrapTaken func(name string) (bool, error)
}

// Bwrap decides box new's backend: Backend, else the source's for a clone, else the
// profile's, else vm. True is a bwrap box.
func (c NewChoice) Bwrap() (bool, error) {
	backend := c.Backend
	if backend != "" {
		if err := profiles.ValidBackend(backend); err != nil {
			return false, errs.Usage("the backends are vm (Incus) and bwrap (bubblewrap)", "--backend: %s", err)
		}
	}
	if err := c.bwrapNotRemote(backend); err != nil {
		return false, err
	}
	if c.From != "" {
		src, _, _ := strings.Cut(c.From, "/")
		bw, err := c.BwrapBox(src)
		if err != nil {
			return false, err
		}
		switch {
		case bw && backend == profiles.BackendVM:
			return false, errs.Usage("a clone has its source's backend: drop --backend", "--from %s is a bwrap box; --backend vm cannot clone it", src)
		case !bw && backend == profiles.BackendBwrap:
			return true, nil // the bwrap clone says there is no such bwrap box
		}
		if bw {
			return true, nil
		}
		if err := c.VMSource(src); err != nil {
			return false, err
		}
		backend = profiles.BackendVM
	}
	if backend == "" && c.Profile != "" {
		b, err := c.ProfileBackend(c.Profile)
		if err != nil {
			return false, err
		}
		backend = b
	}
	if backend == profiles.BackendBwrap {
		return true, c.bwrapNotRemote(backend)
	}
	// A name is unique across backends: a bwrap box (or any directory in its store) has it.
	// (A remote's names are the remote's: this machine's bwrap boxes are not there.)
	if c.Name != "" && c.Remote == "" {
		taken, err := c.BwrapTaken(c.Name)
		if err != nil {
			return false, err
		}
		if taken {
			return false, &TakenError{Name: c.Name, Verb: "new", Across: true, Err: fmt.Errorf("a bwrap box named %q already exists", c.Name)}
		}
	}
	return false, nil
}

// bwrapNotRemote refuses a bwrap box on a remote: bwrap boxes live on this machine.
func (c NewChoice) bwrapNotRemote(backend string) error {
	if c.Remote != "" && backend == profiles.BackendBwrap {
		return errs.Usage("drop --remote (and BOX_REMOTE) for a bwrap box, or mint a vm box there",
			"a bwrap box lives on this machine: --remote %s is for vm boxes", c.Remote)
	}
	return nil
}
