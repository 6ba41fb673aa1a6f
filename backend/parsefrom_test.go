package backend

import (
	"errors"
	"testing"
)

func TestParseFrom(t *testing.T) {
	for from, want := range map[string][2]string{"work": {"work", ""}, "work/authed": {"work", "authed"}, "w/manual-1": {"w", "manual-1"}} {
		src, snap, err := ParseFrom(from)
		if err != nil || src != want[0] || snap != want[1] {
			t.Errorf("ParseFrom(%q) = %q %q %v", from, src, snap, err)
		}
	}
	for _, from := range []string{"", "/snap", "1work", "work/", "work/a/b", "wo rk"} {
		var fe *FromError
		var ne *NameError
		if _, _, err := ParseFrom(from); !errors.As(err, &fe) || !errors.As(err, &ne) {
			t.Errorf("ParseFrom(%q) = %v, want a FromError wrapping a NameError", from, err)
		}
	}
}

func TestRefuseSettings(t *testing.T) {
	if err := RefuseSettings([]string{"name", "from"}, "bwrap", false, "cpu"); err != nil {
		t.Errorf("a setting not refused: %v", err)
	}
	err := RefuseSettings([]string{"container", "cpu", "name"}, "bwrap", false, "cpu", "container")
	if err == nil || err.Error() != "a bwrap box cannot take container, cpu" {
		t.Errorf("refusal: %v", err)
	}
}
