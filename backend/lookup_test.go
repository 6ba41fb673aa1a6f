package backend

import (
	"errors"
	"slices"
	"testing"
)

// TestLookup: the one dispatch of a box name. A held local box wins without asking
// incusd; a name incusd lacks (or cannot be asked about) is the NoBox refusal on every
// verb; a stopped Incus lets the vm verb speak; a remote and a bad name go to the
// registry; without askVM incusd is not asked first.
func TestLookup(t *testing.T) {
	bw := fake{kind: "bwrap", has: map[string]bool{"a": true}}
	vmb := fake{kind: "vm", has: map[string]bool{"b": true}}
	boom := errors.New("incusd down")
	var asked []string
	mk := func(absent, installed bool, vmErr error) Lookup {
		return Lookup{
			Registry: NewRegistry(bw, vmb),
			Held: func(name string) (Backend, error) {
				if name == "look" {
					return nil, errors.New("lookalike")
				}
				if bw.has[name] {
					return bw, nil
				}
				return nil, nil
			},
			IncusAbsent: func() (bool, bool) { return absent, installed },
			VMTaken: func(name string) (bool, error) {
				asked = append(asked, name)
				return vmb.has[name], vmErr
			},
			Listing: NewRegistry(fake{kind: "bwrap", list: []Summary{{Name: "a"}}}, fake{kind: "vm", list: []Summary{{Name: "b"}, {Name: "cc"}}}),
		}
	}
	kind := func(b Backend) string {
		if b == nil {
			return "nil"
		}
		return b.Kind()
	}
	for _, c := range []struct {
		what              string
		l                 Lookup
		name              string
		askVM             bool
		want              string // backend kind, or "nobox"
		wantAsked, vmDown bool
	}{
		{"held bwrap box", mk(false, false, nil), "a", true, "bwrap", false, false},
		{"vm box", mk(false, false, nil), "b", true, "vm", true, false},
		{"no box", mk(false, false, nil), "c", true, "nobox", true, false},
		{"incusd cannot answer", mk(false, false, boom), "c", true, "nobox", true, true},
		{"incus stopped: the vm verb speaks", mk(true, true, nil), "somevm", true, "vm", false, false},
		{"incus stopped, a typo of a local box's name", mk(true, true, nil), "c", true, "nobox", false, true},
		{"incus stopped, a typo, no askVM", mk(true, true, nil), "ab", false, "nobox", false, true},
		{"incus never installed", mk(true, false, nil), "c", true, "nobox", true, false},
		{"no askVM, incus never installed", mk(true, false, nil), "c", false, "nobox", false, false},
		{"no askVM: the verb's request asks", mk(false, false, nil), "c", false, "vm", false, false},
		{"a bad name is the registry's", mk(false, false, nil), "1x", true, "vm", false, false},
		{"a lookalike is the registry's", mk(false, false, nil), "look", true, "vm", false, false},
	} {
		asked = nil
		b, err := c.l.For(c.name, c.askVM)
		got := kind(b)
		var nb *NoBoxError
		if errors.As(err, &nb) {
			got = "nobox"
			// The closest names are the listed ones; with incusd down, not the vm's.
			if !errors.Is(err, ErrNotFound) || nb.Name != c.name || (nb.VMErr != nil) != c.vmDown || slices.Contains(nb.Closest, "cc") == c.vmDown {
				t.Errorf("%s: %#v", c.what, nb)
			}
		} else if err != nil {
			got = "error " + err.Error()
		}
		if got != c.want || (len(asked) > 0) != c.wantAsked {
			t.Errorf("%s: For(%q, %v) = %s (incusd asked: %v), want %s (asked: %v)", c.what, c.name, c.askVM, got, asked, c.want, c.wantAsked)
		}
	}
	remote := mk(false, false, nil)
	remote.Remote = true
	asked = nil
	if b, err := remote.For("c", true); err != nil || b.Kind() != "vm" || len(asked) > 0 {
		t.Errorf("remote: %v, %v (asked %v), want the registry's vm without asking", b, err, asked)
	}
	if err := mk(false, false, nil).Source("b"); err != nil {
		t.Errorf("Source(b), a vm box: %v", err)
	}
	var nb *NoBoxError
	if err := mk(false, false, nil).Source("bb"); !errors.As(err, &nb) || len(nb.Closest) == 0 || nb.Closest[0] != "b" {
		t.Errorf("Source(bb): %v, want no box, closest b", err)
	}
	// box info: the held box answers; a name the vm backend lacks is the NoBox refusal.
	if i, err := mk(false, false, nil).Info("a"); err != nil || i.Backend != "bwrap" {
		t.Errorf("Info(a) = %+v, %v; want the bwrap box", i, err)
	}
	if i, err := mk(false, false, nil).Info("b"); err != nil || i.Backend != "vm" {
		t.Errorf("Info(b) = %+v, %v; want the vm box", i, err)
	}
	if _, err := mk(false, false, nil).Info("bb"); !errors.As(err, &nb) || nb.Name != "bb" || len(nb.Closest) == 0 || nb.Closest[0] != "b" {
		t.Errorf("Info(bb) = %v, want no box, closest b", err)
	}
	if err := mk(true, true, nil).Source("bb"); err != nil {
		t.Errorf("Source with incusd stopped: %v, want the vm verb to speak", err)
	}
}
