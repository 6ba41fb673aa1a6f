package drill

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, in a fixture's root, names the drill that made it (its pid) and its marker
// directory, so a later drill can remove what a killed one left.
const ownerFile = ".box-drill-owner"

// writeOwner records this process as the fixture's owner.
func (f *Fixture) writeOwner() error {
	return os.WriteFile(filepath.Join(f.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"+f.Markers+"\n"), 0o644)
}

// RemoveStale removes the fixtures under workdir whose drill is gone (killed before its
// cleanup ran), with their marker directories and the links to them in home. A fixture
// whose drill still runs is left alone; one without a readable owner is a leftover.
func RemoveStale(workdir, home string) (removed []string) {
	ents, _ := os.ReadDir(workdir)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ".box-drill-fixture-") {
			continue
		}
		dir := filepath.Join(workdir, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		lines := strings.Split(string(b), "\n")
		if err == nil && len(lines) >= 2 {
			if pid, err := strconv.Atoi(lines[0]); err == nil && pid > 0 && alive(pid) {
				continue
			}
			if m := lines[1]; strings.HasPrefix(filepath.Base(m), "box-drill-markers-") && filepath.Dir(m) == filepath.Clean(os.TempDir()) {
				os.RemoveAll(m)
			}
		}
		if home != "" {
			removeHomeLinks(home, dir) // protect.go
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// alive reports whether process pid exists (signal 0; EPERM: it exists, not ours).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
