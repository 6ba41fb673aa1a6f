package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend"
)

// noBox is the refusal for name (backend.NoBoxError): the closest names among the
// bwrap boxes and, when incusd answers, the vm boxes; its hint is worded here.
func noBox(e *env, name string, vmErr error) error {
	var names []string
	if boxes, err := e.boxStore().List(); err == nil {
		for _, b := range boxes {
			names = append(names, b.Name)
		}
	}
	if v := e.vmBackend(); vmErr == nil && exists(v.Socket) {
		v.Quiet = true // its warnings are for box list
		if sums, err := v.List(); err == nil {
			for _, s := range sums {
				names = append(names, s.Name)
			}
		}
	}
	nb := backend.NoBox(name, vmErr, names)
	hint := "'box list' shows your boxes; 'box new --name NAME' mints one"
	if len(nb.Closest) > 0 {
		hint = "did you mean '" + strings.Join(nb.Closest, "' or '") + "'? ('box list' shows every box)"
	}
	if vmErr != nil {
		hint += fmt.Sprintf("\nvm boxes could not be checked (%v): if %s is one, start incusd ('box doctor' checks the host)", vmErr, name)
	}
	return withHint(nb, hint)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// vmSource refuses a clone's source (--from) that is no box: the message names the
// source, not the box being made.
func vmSource(e *env, src string) error {
	if err := e.lookup().Source(src); err != nil {
		return fmt.Errorf("--from %s: %w", src, err)
	}
	return nil
}
