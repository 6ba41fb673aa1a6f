package main

// The bwrap backend of the box verbs is bwrap.Boxes (backend/bwrap); here is how the CLI
// builds it from its environment.

import (
	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/profiles"
)

// bwrapBoxes is the bwrap backend on e's streams, directories and session.
func (e *env) bwrapBoxes() bwrap.Boxes {
	return bwrap.Boxes{
		Store: e.boxStore(), Session: *e.session(false), ConfigHome: e.configHome(),
		User: e.userName(), Quiet: e.quiet, RemoteOnly: e.remoteName() != "",
		NameTaken: func(name string) error { return registry(e).Taken(name) },
		Confirm:   func(force bool, q, refused string) error { return ask(e, force, q, refused) },
		Warn:      func(w error) { warnf(e, w) },
	}
}

// profileName is the profile a bwrap launch uses: the flag, else $BOX_PROFILE, else
// the default.
func profileName(e *env, flag string) string {
	for _, n := range []string{flag, e.getenv("BOX_PROFILE")} {
		if n != "" {
			return n
		}
	}
	return profiles.Default
}

// loadProfile loads by name from e's configuration directory.
func loadProfile(e *env, name string) (*profiles.Profile, error) {
	return backend.LoadProfile(e.configHome(), name)
}
