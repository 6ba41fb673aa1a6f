package boxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Pkg is the box command, built by import path so any package's tests can build it.
const Pkg = "github.com/heavy-duty/box/cmd/box"

var (
	buildMu sync.Mutex
	builds  = map[string]string{} // build tags -> binary
	binDir  string
)

// Binary builds cmd/box once into a directory every user can read.
func Binary(t testing.TB) string { return Build(t, "") }

// Build builds cmd/box with the given build tags, once per set of tags.
func Build(t testing.TB, tags string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := builds[tags]; ok {
		return b
	}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "box-bin-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		binDir = dir
	}
	bin := filepath.Join(binDir, "box")
	if tags != "" {
		bin += "-" + tags
	}
	// Without cgo, as the flake, the Makefile and install.sh build what ships.
	build := exec.Command("go", "build", "-tags", tags, "-o", bin, Pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -tags %q: %v\n%s", tags, err, out)
	}
	builds[tags] = bin
	return bin
}

// UnsafeBinary builds box with -tags boxunsafe: BOX_UNSAFE_OFF=fds,keyring,seccomp,
// terminal switches those protections off. Only tests build it.
func UnsafeBinary(t testing.TB) string { return Build(t, "boxunsafe") }
