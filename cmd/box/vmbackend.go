package main

// The vm backend's side of the box verbs: each verb's vm code is a method of vmBackend
// in backend/vm, one file per verb.

import (
	"errors"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/profiles"
)

// vmBackend implements backend.Backend for vm boxes (Incus instances tagged as boxes).
type vmBackend struct {
	e *env
	// mint stands in for box new's vm code (vm.Backend.Mint) in tests that check argv
	// to the request.
	mint func(backend.MintRequest) error
}

var _ backend.Backend = vmBackend{}

func (vmBackend) Kind() string { return profiles.BackendVM }

// Mint is box new (and new --from) for a vm box.
func (v vmBackend) Mint(r backend.MintRequest) error {
	if v.mint != nil {
		return v.mint(r)
	}
	return v.vm().Mint(r)
}

// vm is the vm backend of backend/vm, talking and writing where this env does.
func (v vmBackend) vm() vm.Backend {
	e := v.e
	return vm.Backend{
		Client: e.daemon().Client, Context: vmContext,
		Getenv: e.getenv, Socket: e.socketPath(), ConfigHome: e.configHome(),
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, Quiet: e.quiet,
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
func (v vmBackend) List() ([]backend.Summary, error)                 { return v.vm().List() }
func (v vmBackend) Enter(name string, l backend.LaunchRequest) error { return v.vm().Enter(name, l) }
func (v vmBackend) Exec(name string, command []string, l backend.LaunchRequest) error {
	return v.vm().Exec(name, command, l)
}
func (v vmBackend) Info(name string) (backend.Info, error) {
	i, err := v.vm().Info(name)
	return i, noBoxFor(v.e, name, err)
}

// noBoxFor turns the vm backend's not-found for name into the refusal every verb gives
// (closest names: asked only now, when the name matched nothing).
func noBoxFor(e *env, name string, err error) error {
	var nf *vm.NotFoundError
	if errors.As(err, &nf) && nf.Name == name {
		return noBox(e, name, nil)
	}
	return err
}
