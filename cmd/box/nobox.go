package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/vm"
)

// noBoxError is a box name that matches no box of either backend. It is found before
// the verb asks a backend anything about the box, so every verb says the same thing.
type noBoxError struct {
	Name    string
	Closest []string // the nearest existing names, best first
	Why     string   // why vm boxes could not be checked ("" when they were)
}

func (e *noBoxError) Error() string { return fmt.Sprintf("no box named %q", e.Name) }

// Is makes it a backend.ErrNotFound.
func (e *noBoxError) Is(target error) bool { return target == backend.ErrNotFound }

// Hint names the closest boxes, or how to see them.
func (e *noBoxError) Hint() string {
	var lines []string
	if len(e.Closest) > 0 {
		lines = append(lines, "did you mean "+quoteList(e.Closest)+"? ('box list' shows every box)")
	} else {
		lines = append(lines, "'box list' shows your boxes; 'box new --name NAME' mints one")
	}
	if e.Why != "" {
		lines = append(lines, e.Why)
	}
	return strings.Join(lines, "\n")
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, " or ")
}

// noBox is the refusal for name: the closest names among the bwrap boxes and, when
// incusd answers, the vm boxes.
func noBox(e *env, name string, vmErr error) error {
	var names []string
	if boxes, err := e.boxStore().List(); err == nil {
		for _, b := range boxes {
			names = append(names, b.Name)
		}
	}
	why := ""
	if vmErr != nil {
		why = fmt.Sprintf("vm boxes could not be checked (%v): if %s is one, start incusd ('box doctor' checks the host)", vmErr, name)
	} else if v := (vmBackend{e: e}).vm(); listQuiet(&v) {
	} else if sums, err := v.List(); err == nil {
		for _, s := range sums {
			names = append(names, s.Name)
		}
	}
	return &noBoxError{Name: name, Closest: backend.Closest(name, names), Why: why}
}

// listQuiet makes v's List say nothing (its warnings are for box list); it reports
// whether there is no incusd to ask at all.
func listQuiet(v *vm.Backend) (absent bool) {
	v.Quiet = true
	_, err := os.Stat(v.Socket)
	return err != nil
}

// vmSource refuses a clone's source (--from) that is no box: the message names the
// source, not the box being made. A remote's names are the remote's to answer.
func vmSource(e *env, src string) error {
	if e.remoteName() != "" || backend.ValidName(src) != nil {
		return nil
	}
	if absent, ok := incusAbsent(e).(*noIncusError); ok && absent.Installed {
		return nil // incusd stopped: the vm verb says so in its turn, after its usage checks
	}
	taken, vmErr := vmBackend{e: e}.Taken(src)
	if vmErr == nil && taken {
		return nil
	}
	return fmt.Errorf("--from %s: %w", src, noBox(e, src, vmErr))
}
