package main

// Remotes: --remote R (or BOX_REMOTE, or REMOTE:NAME on a box argument) aims the vm
// verbs at an Incus remote of the incus client's own configuration, over HTTPS with
// its client certificate (backend/vm's Daemon). This file reads which remote was asked.

import (
	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

// refuseRemote refuses a local-only verb while BOX_REMOTE is set (box drill only with
// --backend vm: the bwrap drill has nothing to do with Incus).
func (e *env) refuseRemote(cmd *cobra.Command) error {
	r := e.getenv("BOX_REMOTE")
	if r == "" {
		return nil
	}
	if f := cmd.Flags().Lookup("backend"); cmd.Name() == "drill" && (f == nil || f.Value.String() != "vm") {
		return nil
	}
	return usagef("unset BOX_REMOTE to act on this machine, or run box "+cmd.Name()+" on "+r+"'s host",
		"box %s acts on this machine's host stack, but BOX_REMOTE=%s is set", cmd.Name(), r)
}

// addRemoteFlags gives every vm verb (and setup-host, doctor) --remote and its
// REMOTE:NAME box arguments, and box new --target.
func addRemoteFlags(root *cobra.Command, e *env) {
	find := func(name string) *cobra.Command {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd == root || cmd.Name() != name {
			return nil // not on this build
		}
		return cmd
	}
	for _, name := range vm.LocalVerbs {
		if cmd := find(name); cmd != nil {
			prev := cmd.PreRunE
			cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
				if err := e.refuseRemote(cmd); err != nil || prev == nil {
					return err
				}
				return prev(cmd, args)
			}
		}
	}
	for _, name := range vm.RemoteVerbs {
		cmd := find(name)
		if cmd == nil {
			continue
		}
		cmd.Flags().StringVar(&e.remote, "remote", "",
			"the Incus remote (of the incus client's configuration, 'incus remote list') to act on; default $BOX_REMOTE, else the local daemon")
		_ = cmd.RegisterFlagCompletionFunc("remote", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		})
		vm := cmd.GroupID == groupVM
		prev := cmd.PreRunE // a verb's own, kept
		cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
			if vm {
				if err := e.remotePrefixes(cmd, args); err != nil {
					return err
				}
			}
			if err := e.checkRemote(); err != nil || prev == nil {
				return err
			}
			return prev(cmd, args)
		}
		if cmd.Name() == "new" {
			cmd.Flags().StringVar(&e.target, "target", "", "the cluster member to place the box on (Incus's target; a cluster remote only)")
		}
	}
}

// remoteName is the remote the vm verbs act on: --remote (or a REMOTE: prefix), else
// $BOX_REMOTE, else "" (the local daemon's socket, as before remotes).
func (e *env) remoteName() string {
	if e.remote != "" {
		return e.remote
	}
	return e.getenv("BOX_REMOTE")
}

// remotePrefixes strips REMOTE: from a verb's box arguments and box-naming flags, in
// place, and sets the remote from it (vm.RemoteArgs: which are box names, which
// prefixes are refused).
func (e *env) remotePrefixes(cmd *cobra.Command, args []string) error {
	r := vm.RemoteArgs{Flag: e.remote}
	n := len(args)
	if d := cmd.ArgsLenAtDash(); d >= 0 {
		n = d
	}
	if err := r.Args(cmd.Name(), args, n); err != nil {
		return err
	}
	for _, name := range vm.BoxFlags(cmd.Name()) {
		f := cmd.Flags().Lookup(name)
		if f == nil || f.Value.String() == "" {
			continue
		}
		v, err := r.Take("--"+name, f.Value.String())
		if err != nil {
			return err
		}
		if err := f.Value.Set(v); err != nil {
			return err
		}
	}
	if r.Seen != "" {
		e.remote = r.Seen
	}
	return nil
}

// checkRemote reads the remote in force before the verb does anything
// (vm.Daemon.Check): an unknown remote is a usage error, an unusable one fails with its
// fix.
func (e *env) checkRemote() error { return e.daemon().Check() }
