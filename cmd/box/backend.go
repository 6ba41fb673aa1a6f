package main

// The backend interface the box verbs dispatch on. A verb on a box asks backendFor
// which backend holds the name (a bwrap box's stamped directory, else incusd) and calls
// its method; box list asks every backend. bwrapBackend is in bwrapbox.go; vmBackend's
// methods are in the verbs' own files, its launch sequence in backend/vm.

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/spf13/cobra"
)

// boxBackend is one backend's side of the box verbs.
type boxBackend interface {
	Kind() string
	Mint(o *newOptions, given []string) error                  // box new (and new --from)
	List() ([]boxJSON, error)                                  // box list
	Info(name string) (infoJSON, error)                        // box info
	Enter(name string, l launchFlags) error                    // box shell
	Exec(name string, cmd []string, l launchFlags) error       // box exec
	Snapshot(name, label string) error                         // box snapshot
	Restore(name, snap string, force bool) error               // box restore
	Rename(old, nu string) error                               // box rename
	Delete(name string, force bool) error                      // box rm
	Start(name string) error                                   // box start
	Stop(name string, timeout time.Duration, force bool) error // box stop
}

// backendFor is the backend that holds the box name: the bwrap one when a bwrap box has
// it, else the vm one (which words its own refusal when incusd has no such box). A
// directory that merely looks like a bwrap box is refused here, before any verb.
func backendFor(e *env, name string) (boxBackend, error) {
	b, err := bwrapBox(e, name)
	switch {
	case err != nil:
		return nil, err
	case b != nil:
		return bwrapBackend{e}, nil
	}
	return vmBackend{e: e}, nil
}

// backends are the backends box list asks, in order: a remote holds vm boxes only.
func backends(e *env) []boxBackend {
	if e.remoteName() != "" {
		return []boxBackend{vmBackend{e: e}}
	}
	return []boxBackend{bwrapBackend{e}, vmBackend{e: e}}
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
func bwrapBox(e *env, name string) (*dirbox.Box, error) {
	if dirbox.ValidName(name) != nil || e.remoteName() != "" { // a remote holds vm boxes only
		return nil, nil // the vm code words the refusal
	}
	b, err := e.boxStore().Lookup(name)
	if errors.Is(err, dirbox.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// vmNameTaken reports whether incusd has an instance called name (a box or not). No
// incusd at all (its socket absent) means no vm boxes; any other failure is an error,
// since a clash could not be ruled out.
func vmNameTaken(e *env, name string) (bool, error) {
	ctx, stop := vmContext()
	defer stop()
	c := e.client()
	defer c.Close()
	_, _, err := c.Instance(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case incus.IsNotFound(err), noIncus(err):
		return false, nil
	}
	return false, vmErr(e, err)
}

// noIncus: incusd's socket does not exist: the vm backend is not set up here.
func noIncus(err error) bool { return errors.Is(err, syscall.ENOENT) }

// firstErr is err, else what then returns.
func firstErr(err error, then func() error) error {
	if err != nil {
		return err
	}
	return then()
}

// register adds the launch flags to a verb that enters a box.
func (l *launchFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&l.yes, "yes", "y", false, "bwrap boxes: skip the environment audit's question (the audit still prints)")
	cmd.Flags().BoolVar(&l.allowRoot, "allow-root", false, "bwrap boxes: run the sandbox even though box runs as root")
	cmd.Flags().StringArrayVar(&l.allow, "allow", nil, "bwrap boxes with tier allowlist: also allow NAME (or *.DOMAIN, @LIST, NAME:PORT) for this launch (repeatable)")
}

// refuseVM: the launch flags mean nothing to a vm box (no host environment enters it,
// and box never runs it as the host's root); refused rather than ignored.
func (l launchFlags) refuseVM() error {
	if l.yes || l.allowRoot || len(l.allow) > 0 {
		return usagef("drop -y, --allow-root and --allow for a vm box", "-y, --allow-root and --allow are for bwrap boxes: a vm box gets no host environment to audit, and its network is the box bridge's")
	}
	return nil
}

// vmOnlyVerb refuses a vm-only verb aimed at a bwrap box (or a lookalike directory).
func vmOnlyVerb(e *env, verb, name string) error {
	b, err := bwrapBox(e, name)
	if err != nil || b == nil {
		return err
	}
	hint := map[string]string{
		"export": "a bwrap box is a directory: snapshot it (box snapshot) or clone it (box new --from)",
		"expose": "a bwrap box at tier full shares the host's network; box expose is for vm boxes",
	}[verb]
	return usagef(hint, "box %s is a bwrap box: box %s is for vm boxes", name, verb)
}

// bwrapNameFree refuses to import a vm box under a bwrap box's name: a name is unique
// across both backends.
func bwrapNameFree(e *env, name, file string) error {
	if !e.boxStore().Taken(name) {
		return nil
	}
	return withHint(fmt.Errorf("a bwrap box named %q already exists: nothing was imported", name),
		fmt.Sprintf("import it under another name: box import %s --name NEW", file))
}
