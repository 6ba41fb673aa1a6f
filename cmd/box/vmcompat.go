package main

// Old names that the vm verbs not yet in backend/vm (shell, exec, tmux, export, import)
// and setup-host still call; they go when those verbs move.

import (
	"context"

	"github.com/heavy-duty/box/backend/incus"
)

// client returns a client for incusd: the local socket, or the remote in force.
func (e *env) client() *incus.Client { return e.daemon().Client() }

// resolve is vm.Resolve with the CLI's hints.
func resolve(ctx context.Context, e *env, c *incus.Client, name string) (*incus.Instance, error) {
	return vmBackend{e: e}.vm().Resolve(ctx, c, name)
}

// placementPool is vm.Backend.PlacementPool with the CLI's hints.
func placementPool(ctx context.Context, e *env, c *incus.Client, placement string) (string, error) {
	return vmBackend{e: e}.vm().PlacementPool(ctx, c, placement)
}
