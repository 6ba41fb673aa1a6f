package main

// The vm backend's side of the box verbs: each verb's vm code is a method of vmBackend
// in the verb's own file; the launch sequence of box new is in backend/vm.

import (
	"context"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/profiles"
)

// vmBackend implements backend.Backend for vm boxes (Incus instances tagged as boxes).
type vmBackend struct {
	e *env
	// mint is box new's vm code (runNew; tests swap it to check argv to options).
	mint func(*env, *newOptions, []string) error
}

var _ backend.Backend = vmBackend{}

func (vmBackend) Kind() string { return profiles.BackendVM }

// Mint is box new (and new --from) for a vm box.
func (v vmBackend) Mint(r backend.MintRequest) error {
	o, given := newOptionsOf(r), r.Given
	if v.mint != nil {
		return v.mint(v.e, o, given)
	}
	return runNew(v.e, o, given)
}

// open resolves the vm box name for a verb: a context that Ctrl-C cancels, a client,
// the instance (the tag boundary checked); done releases them.
func (v vmBackend) open(name string) (context.Context, *incus.Client, *incus.Instance, func(), error) {
	ctx, stop := vmContext()
	c := v.e.client()
	done := func() { c.Close(); stop() }
	inst, err := resolve(ctx, v.e, c, name)
	if err != nil {
		done()
		return nil, nil, nil, nil, err
	}
	return ctx, c, inst, done, nil
}

// vm is the vm backend of backend/vm, talking and writing where this env does.
func (v vmBackend) vm() vm.Backend {
	e := v.e
	return vm.Backend{
		Client: e.client, Context: vmContext,
		Getenv: e.getenv, Socket: e.socketPath(),
		Stdout: e.stdout, Stderr: e.stderr, Quiet: e.quiet,
		Err: func(err error) error { return vmErr(e, err) },
		Ask: func(force bool, question, refused string) error { return ask(e, force, question, refused) },
	}
}

// The verbs whose vm side is in backend/vm.

func (v vmBackend) Start(name string) error { return v.vm().Start(name) }
func (v vmBackend) Stop(name string, timeout time.Duration, force bool) error {
	return v.vm().Stop(name, timeout, force)
}
func (v vmBackend) Delete(name string, force bool) error { return v.vm().Delete(name, force) }
func (v vmBackend) Rename(old, nu string) error          { return v.vm().Rename(old, nu) }
func (v vmBackend) Snapshot(name, label string) (string, error) {
	return v.vm().Snapshot(name, label)
}
func (v vmBackend) Restore(name, snap string, force bool) error {
	return v.vm().Restore(name, snap, force)
}
func (v vmBackend) List() ([]backend.Summary, error)       { return v.vm().List() }
func (v vmBackend) Info(name string) (backend.Info, error) { return v.vm().Info(name) }
