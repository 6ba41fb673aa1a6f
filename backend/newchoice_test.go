package backend

import (
	"errors"
	"testing"

	"github.com/heavy-duty/box/internal/errs"
)

// choice is a NewChoice over a bwrap store holding "bw", a vm daemon holding "vmbox",
// and profiles "bp" (bwrap) and "vp" (vm).
func choice(c NewChoice) NewChoice {
	c.BwrapBox = func(n string) (bool, error) { return n == "bw", nil }
	c.BwrapTaken = func(n string) (bool, error) { return n == "bw", nil }
	c.VMSource = func(n string) error {
		if n != "vmbox" {
			return errors.New("no box " + n)
		}
		return nil
	}
	c.ProfileBackend = func(n string) (string, error) {
		return map[string]string{"bp": "bwrap", "vp": "vm"}[n], nil
	}
	return c
}

func TestNewChoice(t *testing.T) {
	for _, tc := range []struct {
		c     NewChoice
		bwrap bool
		err   string // "usage", "taken", "other", or ""
	}{
		{NewChoice{Name: "x"}, false, ""},
		{NewChoice{Name: "x", Backend: "bwrap"}, true, ""},
		{NewChoice{Name: "x", Backend: "lxc"}, false, "usage"},
		{NewChoice{Name: "x", Profile: "bp"}, true, ""},
		{NewChoice{Name: "x", Profile: "vp"}, false, ""},
		{NewChoice{Name: "x", Backend: "vm", Profile: "bp"}, false, ""},
		{NewChoice{Name: "x", From: "bw/snap"}, true, ""},
		{NewChoice{Name: "x", From: "bw", Backend: "vm"}, false, "usage"},
		{NewChoice{Name: "x", From: "nobox", Backend: "bwrap"}, true, ""},
		{NewChoice{Name: "x", From: "vmbox", Profile: "bp"}, false, ""},
		{NewChoice{Name: "x", From: "nobox"}, false, "other"},
		{NewChoice{Name: "bw"}, false, "taken"}, // the CLI words its hint (across backends)
		{NewChoice{Name: "bw", Remote: "lab"}, false, ""},
		{NewChoice{Name: "x", Backend: "bwrap", Remote: "lab"}, false, "usage"},
		{NewChoice{Name: "x", Profile: "bp", Remote: "lab"}, true, "usage"},
	} {
		bw, err := choice(tc.c).Bwrap()
		got := ""
		switch {
		case err == nil:
		case errs.IsUsage(err):
			got = "usage"
		case errors.As(err, new(*TakenError)):
			got = "taken"
		default:
			got = "other"
		}
		if got != tc.err || err == nil && bw != tc.bwrap {
			t.Errorf("%+v: bwrap %t err %v, want %t %q", tc.c, bw, err, tc.bwrap, tc.err)
		}
	}
}
