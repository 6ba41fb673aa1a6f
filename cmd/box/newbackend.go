package main

// box new's choice of backend (backend.NewChoice), and its flags for bwrap boxes.

import (
	"fmt"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

func newBackendFlags(cmd *cobra.Command, o *newOptions) {
	f := cmd.Flags()
	f.StringVar(&o.backend, "backend", "", "vm or bwrap (default: a clone's source's, else the profile's (--profile or $BOX_PROFILE), else vm)")
	f.StringVar(&o.network, "network", "", "bwrap boxes: the network tier, "+policy.TierList("or")+" (default: the profile's)")
	f.StringVar(&o.workdir, "workdir", "", "bwrap boxes: the working directory the box is bound to (default: the current one)")
	f.StringArrayVar(&o.sshHosts, "ssh-host", nil, "bwrap boxes: let the profile's ssh keys sign SSH logins to HOST or HOST:PORT, stamped on the box (repeatable; adds to the profile's ssh.hosts)")
}

// newIsBwrap decides box new's backend (backend.NewChoice); each backend's Mint refuses
// the settings of the other (backend.SettingsError, worded by newErr).
func newIsBwrap(e *env, o *newOptions) (bool, error) {
	return backend.NewChoice{
		Backend: o.backend, From: o.from, Profile: o.profile, Name: o.Name, Remote: e.remoteName(),
		BwrapBox: func(name string) (bool, error) {
			b, err := bwrapBox(e, name)
			return b != nil, err
		},
		VMSource: func(name string) error { // the message names the source, not the box being made
			if err := e.lookup().Source(name); err != nil {
				return fmt.Errorf("--from %s: %w", name, err)
			}
			return nil
		},
		ProfileBackend: func(name string) (string, error) {
			p, err := loadProfile(e, name)
			if err != nil {
				return "", err
			}
			return p.Backend, nil
		},
		BwrapTaken: func(name string) (bool, error) { return e.bwrapBoxes().Taken(name) },
	}.Bwrap()
}
