package main

// Remotes: --remote R (or BOX_REMOTE, or REMOTE:NAME on a box argument) aims the vm
// verbs at an Incus remote of the incus client's own configuration, over HTTPS with
// its client certificate (backend/vm's Daemon). This file reads which remote was asked.

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

// remoteVerbs are the verbs that take --remote: every vm verb (a test holds this list
// to the vm group), setup-host and doctor. Looked up by name: walking root.Commands()
// would sort the tree and change which verb a typo is told it meant.
var remoteVerbs = []string{"new", "list", "info", "shell", "tmux", "exec", "snapshot", "restore", "rename",
	"start", "stop", "rm", "incus", "export", "import", "expose", "setup-host", "doctor"}

// localVerbs act on this machine's stack (its firewall, its boxes probed from this
// host): BOX_REMOTE set is refused by name, never ignored.
var localVerbs = []string{"teardown-host", "migrate-host", "drill"}

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
	for _, name := range localVerbs {
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
	for _, name := range remoteVerbs {
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

// boxFlags are the flags that name boxes (and so may carry a REMOTE: prefix).
var boxFlags = map[string][]string{"new": {"name", "from"}, "import": {"name"}}

// boxArgIndexes are the positions of a verb's arguments that name boxes (and so may
// carry a REMOTE: prefix). Files, labels, ports and commands are never rewritten.
func boxArgIndexes(cmd *cobra.Command, args []string) []int {
	n := len(args)
	if d := cmd.ArgsLenAtDash(); d >= 0 && d < n {
		n = d
	}
	switch cmd.Name() {
	case "list", "new", "import":
		return nil
	case "rename":
		return []int{0, 1}[:min(2, n)]
	default:
		return []int{0}[:min(1, n)]
	}
}

// remotePrefixes strips REMOTE: from a verb's box arguments (and boxFlags), in place, and sets the remote from it. Two different remotes in one
// command, or a prefix that contradicts --remote, are usage errors: box never moves a
// box between daemons.
func (e *env) remotePrefixes(cmd *cobra.Command, args []string) error {
	flagRemote := e.remote
	seen := ""
	take := func(what, v string) (string, error) {
		r, name, ok := strings.Cut(v, ":")
		if !ok {
			return v, nil
		}
		if r == "" || name == "" {
			return "", usagef("write REMOTE:NAME, e.g. lab:work, or --remote lab work", "%s %q: an empty remote or name", what, v)
		}
		switch {
		case flagRemote != "" && r != flagRemote:
			return "", usagef("drop the prefix or the flag", "%s %q names remote %s, but --remote is %s", what, v, r, flagRemote)
		case seen != "" && r != seen:
			return "", usagef("box acts on one daemon at a time; copy between remotes with incus itself", "%s %q names remote %s, another argument remote %s", what, v, r, seen)
		}
		seen = r
		return name, nil
	}
	for _, i := range boxArgIndexes(cmd, args) {
		v, err := take("box", args[i])
		if err != nil {
			return err
		}
		args[i] = v
	}
	if flags := boxFlags[cmd.Name()]; flags != nil {
		for _, name := range flags {
			f := cmd.Flags().Lookup(name)
			if f == nil || f.Value.String() == "" {
				continue
			}
			v, err := take("--"+name, f.Value.String())
			if err != nil {
				return err
			}
			if err := f.Value.Set(v); err != nil {
				return err
			}
		}
	}
	if seen != "" {
		e.remote = seen
	}
	return nil
}

// checkRemote reads the remote in force before the verb does anything
// (vm.Daemon.Check): an unknown remote is a usage error, an unusable one fails with its
// fix.
func (e *env) checkRemote() error { return e.daemon().Check() }

// remoteHint is the hint of an answer that the remote does not trust box's client
// certificate.
func remoteHint(remote string) string {
	return fmt.Sprintf("remote %s does not trust this client certificate: add it on the server ('incus config trust add-certificate client.crt'), or re-add the remote with a trust token ('incus remote add %s TOKEN')",
		remote, remote)
}

// bwrapNotRemote refuses a bwrap box on a remote: bwrap boxes live on this machine.
func bwrapNotRemote(e *env, backend string) error {
	if r := e.remoteName(); r != "" && backend == profiles.BackendBwrap {
		return usagef("drop --remote (and BOX_REMOTE) for a bwrap box, or mint a vm box there",
			"a bwrap box lives on this machine: --remote %s is for vm boxes", r)
	}
	return nil
}
