package bwrap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/dirbox"
)

// TestBoxesFind: a held box is not looked up again; an absent, invalid or remote-held
// name is no bwrap box (nil, no error); a lookalike directory is an error, and taken.
func TestBoxesFind(t *testing.T) {
	be := Boxes{Store: dirbox.Store{Root: t.TempDir()}}
	held := &dirbox.Box{Stamp: dirbox.Stamp{Name: "held"}}
	if b, err := be.Holding(held).Find("held"); b != held || err != nil {
		t.Errorf("held: %v, %v", b, err)
	}
	for _, name := range []string{"absent", "9bad"} {
		if b, err := be.Find(name); b != nil || err != nil {
			t.Errorf("%s: %v, %v", name, b, err)
		}
	}
	if err := os.Mkdir(filepath.Join(be.Store.Root, "look"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Find("look"); err == nil {
		t.Error("a lookalike directory was not refused")
	}
	if taken, err := be.Taken("look"); !taken || err != nil {
		t.Errorf("Taken(look) = %v, %v", taken, err)
	}
	if taken, err := be.Taken("absent"); taken || err != nil {
		t.Errorf("Taken(absent) = %v, %v", taken, err)
	}
	be.RemoteOnly = true
	if b, err := be.Find("look"); b != nil || err != nil {
		t.Errorf("remote: %v, %v", b, err)
	}
}
