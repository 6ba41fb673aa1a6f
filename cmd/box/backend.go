package main

// The box verbs dispatch on the backend interface (package backend). A verb on a box
// asks e.lookup() which backend holds the name (a bwrap box's directory, else incusd)
// and calls its method; box list asks every backend. The bwrap one is bwrap.Boxes (built
// in bwrapbox.go), the vm one vm.Backend (built in vm.go).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/spf13/cobra"
)

// registry is the backends a verb dispatches to, in order: a remote holds vm boxes
// only, else a bwrap box's name is found first (a directory lookup, no daemon asked).
func registry(e *env) backend.Registry {
	if e.remoteName() != "" {
		return backend.NewRegistry(e.vmBackend())
	}
	return backend.NewRegistry(e.bwrapBoxes(), e.vmBackend())
}

// lookup is backend.Lookup on e's backends and host: the bwrap box comes held.
func (e *env) lookup() backend.Lookup {
	quiet := *e
	quiet.quiet = true
	return backend.Lookup{
		Registry: registry(e), Remote: e.remoteName() != "",
		Held: func(name string) (backend.Backend, error) {
			be := e.bwrapBoxes()
			b, err := be.Find(name)
			if err != nil || b == nil {
				return nil, err
			}
			return be.Holding(b), nil
		},
		IncusAbsent: func() (bool, bool) {
			absent, ok := incusAbsent(e).(*noIncusError)
			return ok, ok && absent.Installed
		},
		VMTaken: e.vmBackend().Taken,
		Listing: registry(&quiet), // the names a refusal offers (hints.go words it)
	}
}

// launchFlags are the flags of the verbs that launch a sandbox.
type launchFlags struct {
	yes, allowRoot bool
	allow          []string // --allow: tier allowlist names for this launch, beside the profile's
}

// boxStore is where the bwrap boxes live.
func (e *env) boxStore() dirbox.Store { return dirbox.Store{Root: dirbox.Root(e.dataHome())} }

// bwrapBox finds the bwrap box name. It returns nil and no error when no directory has
// the name (the verb goes on with the vm backend), and an error for a directory that
// merely looks like a box: box never touches it, and never hands its name to incusd.
func bwrapBox(e *env, name string) (*dirbox.Box, error) { return e.bwrapBoxes().Find(name) }

// register adds the launch flags to a verb that enters a box.
func (l *launchFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&l.yes, "yes", "y", false, "bwrap boxes: skip the environment audit's question (the audit still prints)")
	cmd.Flags().BoolVarP(&l.yes, "force", "f", false, "the same as -y (every verb that asks takes both)")
	cmd.Flags().BoolVar(&l.allowRoot, "allow-root", false, "bwrap boxes: run the sandbox even though box runs as root")
	cmd.Flags().StringArrayVar(&l.allow, "allow", nil, "bwrap boxes with tier allowlist: also allow NAME (or *.DOMAIN, @LIST, NAME:PORT) for this launch (repeatable)")
}

// req is the launch request the flags ask for.
func (l launchFlags) req() backend.LaunchRequest {
	return backend.LaunchRequest{Yes: l.yes, AllowRoot: l.allowRoot, Allow: l.allow}
}

// vmOnlyVerb refuses a vm-only verb aimed at a bwrap box (or a lookalike directory); a
// usage error, its hint in hints.go.
func vmOnlyVerb(e *env, verb, name string) error {
	b, err := bwrapBox(e, name)
	if err != nil || b == nil {
		return err
	}
	return usagef("", "%w", &backend.UnsupportedError{Verb: verb, Backend: "bwrap", Name: name})
}

// mintRequest is box new's request: its options and the flags given.
func mintRequest(o *newOptions, given []string) backend.MintRequest {
	return backend.MintRequest{
		Name: o.Name, Template: o.Template, Profile: o.profile, From: o.from,
		CPU: o.CPU, Memory: o.Memory, Disk: o.Disk, VM: o.VM, Container: o.Container,
		Timeout: o.timeout, Backend: o.backend, Network: o.network, Workdir: o.workdir,
		SSHHosts: o.sshHosts, Given: given,
	}
}

// flagsAfterBox lets a verb whose command follows -- (box exec) take its flags after
// the box name too (box exec work -y -- CMD), as the other verbs do: the flags between
// BOX and -- are parsed, and args comes back as BOX -- CMD. Without --, everything after
// BOX is the command, as before.
func flagsAfterBox(cmd *cobra.Command, args []string) ([]string, error) {
	if len(args) < 2 || !strings.HasPrefix(args[1], "-") || args[1] == "--" {
		return args, nil
	}
	dash := slices.Index(args, "--")
	if dash < 0 {
		return args, nil
	}
	if err := cmd.Flags().Parse(args[1:dash]); err != nil {
		return nil, usagef(fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath()), "%s", err)
	}
	if left := cmd.Flags().Args(); len(left) > 0 {
		return nil, usagef(fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath()), "%q between the box and --: only flags go there", left[0])
	}
	return append([]string{args[0]}, args[dash:]...), nil
}
