package main

// The bwrap backend of the box verbs is bwrap.Boxes (backend/bwrap); here is how the CLI
// builds it from its environment, and what it words by flag name: box new's refusals and
// the errors that name a flag.

import (
	"errors"
	"strings"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// bwrapBackend is bwrap.Boxes as the CLI calls it: Mint refuses by flag name first.
type bwrapBackend struct {
	bwrap.Boxes
	e *env
}

// bwrapBoxes is the bwrap backend on e's streams, directories and session.
func (e *env) bwrapBoxes() bwrapBackend {
	return bwrapBackend{bwrap.Boxes{
		Store: e.boxStore(), Session: *e.session(false), ConfigHome: e.configHome(),
		User: e.userName(), Quiet: e.quiet, RemoteOnly: e.remoteName() != "",
		NameTaken: func(name string) error { return registry(e).Taken(name) },
		Confirm:   func(force bool, q, refused string) error { return ask(e, force, q, refused) },
	}, e}
}

// vmOnlyNewFlags are box new's flags a bwrap box cannot honour.
var vmOnlyNewFlags = []string{"cpu", "memory", "disk", "vm", "container", "timeout"}

// refuseFlags refuses the named flags if given, naming them and who does not take them.
func refuseFlags(given, bad []string, who, hint string) error {
	var hit []string
	for _, g := range given {
		for _, b := range bad {
			if g == b {
				hit = append(hit, "--"+g)
			}
		}
	}
	if len(hit) == 0 {
		return nil
	}
	return usagef(hint, "%s cannot take %s", who, strings.Join(hit, ", "))
}

// Mint is box new --backend bwrap: the flags a bwrap box (or a clone) cannot honour
// and a bad --name or --from are refused here, then bwrap.Boxes mints, its errors
// about --workdir and --network worded here.
func (be bwrapBackend) Mint(r backend.MintRequest) error {
	if err := refuseFlags(r.Given, vmOnlyNewFlags, "a bwrap box", "resources, instance types and the launch timeout are vm settings: drop them, or use --backend vm"); err != nil {
		return err
	}
	if r.Name == "" {
		return usagef("run 'box new --help' for usage", "box new needs --name NAME")
	}
	if err := dirbox.ValidName(r.Name); err != nil {
		return usagef("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	if r.From != "" {
		if err := refuseFlags(r.Given, []string{"template", "profile", "network", "ssh-host"}, "a clone", "a clone is a copy of its source: drop them, or mint a new box without --from"); err != nil {
			return err
		}
		if _, _, err := vm.ParseFrom(r.From); err != nil {
			return vmErr(be.e, err)
		}
	}
	r.Profile = profileName(be.e, r.Profile)
	err := be.Boxes.Mint(r)
	var wd *bwrap.NoWorkdirError
	var ne *bwrap.NetworkError
	switch {
	case errors.As(err, &wd) && wd.Err != nil:
		return usagef("name an existing directory", "--workdir: %s", wd.Err)
	case errors.As(err, &wd):
		return usagef("name an existing directory", "--workdir %s: not a directory", wd.Dir)
	case errors.As(err, &ne):
		return usagef("the tiers are "+policy.TierList("and"), "--network: %s", ne.Err)
	}
	return err
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
	return bwrap.LoadProfile(e.configHome(), name)
}
