package backend

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// fake is a backend holding the names in has.
type fake struct {
	kind string
	has  map[string]bool
	err  error
	list []Summary
}

func (f fake) Kind() string                 { return f.kind }
func (f fake) Taken(n string) (bool, error) { return f.has[n], f.err }
func (fake) Mint(MintRequest) error         { return nil }
func (f fake) List() ([]Summary, error)     { return f.list, f.err }
func (f fake) Info(n string) (Info, error) {
	if !f.has[n] {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, n)
	}
	return Info{Summary: Summary{Name: n, Backend: f.kind}}, nil
}
func (fake) Enter(string, LaunchRequest) error          { return nil }
func (fake) Exec(string, []string, LaunchRequest) error { return nil }
func (fake) Snapshot(_, l string) (string, error)       { return l, nil }
func (fake) Restore(string, string, bool) error         { return nil }
func (fake) Rename(string, string) error                { return nil }
func (fake) Delete(string, bool) error                  { return nil }
func (fake) Start(string) error                         { return nil }
func (fake) Stop(string, time.Duration, bool) error     { return nil }

func TestRegistry(t *testing.T) {
	bw := fake{kind: "bwrap", has: map[string]bool{"a": true}}
	vm := fake{kind: "vm", has: map[string]bool{"b": true}}
	r := NewRegistry(bw, vm)
	for name, want := range map[string]string{"a": "bwrap", "b": "vm", "c": "vm", "../a": "vm"} {
		b, err := r.For(name)
		if err != nil || b.Kind() != want {
			t.Errorf("For(%q) = %v, %v; want %s", name, b, err, want)
		}
	}
	var nt *NameTakenError
	if err := r.Taken("b"); !errors.As(err, &nt) || nt.Backend != "vm" || !errors.Is(err, ErrNameTaken) {
		t.Errorf("Taken(b) = %v", err)
	}
	if err := r.Taken("c"); err != nil {
		t.Errorf("Taken(c) = %v", err)
	}
	boom := errors.New("boom")
	if err := NewRegistry(fake{kind: "bwrap", err: boom}, vm).Taken("c"); err != boom {
		t.Errorf("a backend that cannot rule a clash out: %v", err)
	}
	if got := r.Kind("vm"); got == nil || got.Kind() != "vm" {
		t.Errorf("Kind(vm) = %v", got)
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"a", "work-1", "A9"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "1a", "a-", "a_b", "../x"} {
		if ValidName(bad) == nil {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
	var ne *NameError
	if err := ValidName("1a"); !errors.As(err, &ne) || err.Error() != `invalid box name "1a": must not start with a digit` {
		t.Errorf("ValidName(1a) = %v", err)
	}
	if err := ValidLabel(""); err == nil || err.Error() != "invalid snapshot name: empty" {
		t.Errorf("ValidLabel() = %v", err)
	}
	if ValidLabel("authed") != nil || ValidLabel("a/b") == nil || ValidLabel("..") == nil {
		t.Error("ValidLabel")
	}
}

// List merges every backend's boxes by name; one that cannot list fails it; none is [].
func TestRegistryList(t *testing.T) {
	bw := fake{kind: "bwrap", list: []Summary{{Name: "c", Backend: "bwrap"}, {Name: "a", Backend: "bwrap"}}}
	vm := fake{kind: "vm", list: []Summary{{Name: "b", Backend: "vm"}}}
	got, err := NewRegistry(bw, vm).List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name+"/"+s.Backend)
	}
	if fmt.Sprint(names) != "[a/bwrap b/vm c/bwrap]" {
		t.Errorf("List = %v, want a/bwrap b/vm c/bwrap", names)
	}
	boom := errors.New("boom")
	if _, err := NewRegistry(bw, fake{kind: "vm", err: boom}).List(); err != boom {
		t.Errorf("a backend that cannot list: %v", err)
	}
	if got, err := NewRegistry(fake{kind: "vm"}).List(); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no box: %#v, %v; want [] (never nil)", got, err)
	}
}
