package main

import (
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

// notBoxes, in process (the live teardown tests are in host/).
func TestNotBoxes(t *testing.T) {
	got := notBoxes([]incus.Instance{{Name: "a", Config: map[string]string{incus.KeyBox: "1"}},
		{Name: "legacy", Config: map[string]string{incus.KeyLegacy: "1"}}, {Name: "db"}})
	if len(got) != 1 || got[0] != "db" {
		t.Errorf("notBoxes = %q", got)
	}
}
