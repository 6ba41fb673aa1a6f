package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// box links no reflective method lookup (reflect's Method or MethodByName, as
// text/template's executor calls): one reachable call makes the linker keep every
// exported method of every type, a fifth more code that every verb's start-up maps and
// the runtime walks (issue 24). A cobra help, usage or version template is how one
// comes in: box's --version is its own flag for that reason (root.go).
func TestNoReflectiveMethodLookup(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "box")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as what ships
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	syms, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	if !bytes.Contains(syms, []byte(" main.Main\n")) {
		t.Fatalf("go tool nm lists no main.Main: not box's symbols")
	}
	re := regexp.MustCompile(`(?m) T (reflect\.Value\.Method|reflect\.Value\.MethodByName|reflect\.\(\*rtype\)\.Method|reflect\.\(\*rtype\)\.MethodByName)$`)
	if m := re.FindAll(syms, -1); len(m) > 0 {
		t.Errorf("box links %q: the linker keeps every exported method (a cobra template? text/template?)", m)
	}
}
