package bwrap

import (
	"errors"
	"testing"
)

// TestNewRequestRefusals: each bad setting of box run is refused with its typed error,
// which the CLI words by flag name; good settings fill in the profile and template.
func TestNewRequestRefusals(t *testing.T) {
	home := t.TempDir()
	req, err := NewRequest(home, RunSettings{Profile: "default", Request: Request{Network: "none", Command: []string{"true"}}})
	if err != nil || req.Profile == nil || req.Template == nil || req.Network != "none" || len(req.Command) != 1 {
		t.Fatalf("good settings: %+v, %v", req, err)
	}
	var be *BackendError
	if _, err := NewRequest(home, RunSettings{Profile: "default", Backend: "lxc"}); !errors.As(err, &be) {
		t.Errorf("backend lxc: %v, want *BackendError", err)
	}
	var nb *NotBwrapError
	if _, err := NewRequest(home, RunSettings{Profile: "default", Backend: "vm"}); !errors.As(err, &nb) || !nb.Asked || nb.Backend != "vm" {
		t.Errorf("backend vm: %v, want *NotBwrapError asked", err)
	}
	var ne *NetworkError
	if _, err := NewRequest(home, RunSettings{Profile: "default", Request: Request{Network: "nowhere"}}); !errors.As(err, &ne) {
		t.Errorf("network nowhere: %v, want *NetworkError", err)
	}
	var me *ModeError
	if _, err := NewRequest(home, RunSettings{Profile: "default", Request: Request{Isolation: "chroot"}}); !errors.As(err, &me) {
		t.Errorf("isolation chroot: %v, want *ModeError", err)
	}
	if _, err := NewRequest(home, RunSettings{Profile: "no-such-profile"}); err == nil {
		t.Error("a missing profile was accepted")
	}
}
