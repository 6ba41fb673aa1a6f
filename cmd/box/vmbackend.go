package main

// The vm backend's side of the box verbs: each verb's vm code is a method of vmBackend
// in the verb's own file; the launch sequence of box new is in backend/vm.

import (
	"context"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
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
