package main

// box new's choice of backend, and its flags for bwrap boxes. The vm launch sequence
// stays in new.go.

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

func newBackendFlags(cmd *cobra.Command, o *newOptions) {
	f := cmd.Flags()
	f.StringVar(&o.backend, "backend", "", "vm or bwrap (default: a clone's source's, else the profile's (--profile or $BOX_PROFILE), else vm)")
	f.StringVar(&o.network, "network", "", "bwrap boxes: the network tier, "+policy.TierList("or")+" (default: the profile's)")
	f.StringVar(&o.workdir, "workdir", "", "bwrap boxes: the working directory the box is bound to (default: the current one)")
	f.StringArrayVar(&o.sshHosts, "ssh-host", nil, "bwrap boxes: let the profile's ssh keys sign SSH logins to HOST or HOST:PORT, stamped on the box (repeatable; adds to the profile's ssh.hosts)")
}

// newIsBwrap decides box new's backend: --backend, else the profile's (--profile), else
// the source's for a clone, else vm. Flags of the other backend are refused by name.
func newIsBwrap(e *env, o *newOptions, given []string) (bool, error) {
	backend := o.backend
	if backend != "" {
		if err := profiles.ValidBackend(backend); err != nil {
			return false, usagef("the backends are vm (Incus) and bwrap (bubblewrap)", "--backend: %s", err)
		}
	}
	if err := bwrapNotRemote(e, backend); err != nil {
		return false, err
	}
	if o.from != "" {
		src, _, _ := strings.Cut(o.from, "/")
		b, err := bwrapBox(e, src)
		if err != nil {
			return false, err
		}
		switch {
		case b != nil && backend == profiles.BackendVM:
			return false, usagef("a clone has its source's backend: drop --backend", "--from %s is a bwrap box; --backend vm cannot clone it", src)
		case b == nil && backend == profiles.BackendBwrap:
			return true, nil // bwrapBackend.clone says there is no such bwrap box
		}
		if b != nil {
			return true, nil
		}
		if err := vmSource(e, src); err != nil {
			return false, err
		}
		backend = profiles.BackendVM
	}
	if backend == "" && o.profile != "" {
		p, err := loadProfile(e, o.profile)
		if err != nil {
			return false, err
		}
		backend = p.Backend
	}
	if backend == profiles.BackendBwrap {
		return true, bwrapNotRemote(e, backend)
	}
	// A name is unique across backends: a bwrap box (or any directory in its store) has it.
	// (A remote's names are the remote's: this machine's bwrap boxes are not there.)
	if o.Name != "" && e.remoteName() == "" {
		taken, err := e.bwrapBoxes().Taken(o.Name)
		if err != nil {
			return false, err
		}
		if taken {
			return false, withHint(fmt.Errorf("a bwrap box named %q already exists", o.Name), "pick another --name: a name is unique across both backends ('box list' shows the boxes)")
		}
	}
	return false, refuseFlags(given, []string{"network", "workdir", "ssh-host"}, "a vm box",
		"a vm box's network is the box bridge (set up by 'box setup-host') and it has no host working directory or agent of the host; --network, --workdir and --ssh-host are for --backend bwrap")
}
