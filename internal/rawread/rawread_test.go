package rawread

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileAsOS: the same bytes as os.ReadFile for an empty file, a small one, one
// larger than the first buffer and a /proc file (whose size stat gives as 0), and the
// same kind of error for a missing file and a directory.
func TestReadFileAsOS(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"empty": nil,
		"small": []byte("hello\n"),
		"exact": bytes.Repeat([]byte("x"), 512),
		"large": bytes.Repeat([]byte("0123456789abcdef"), 10000),
	}
	var names []string
	for n, b := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	names = append(names, "/proc/self/mountinfo", "/proc/meminfo")
	for _, p := range names {
		want, werr := os.ReadFile(p)
		got, err := ReadFile(p)
		if err != nil || werr != nil {
			t.Fatalf("%s: %v (os: %v)", p, err, werr)
		}
		if strings.HasPrefix(p, "/proc/") {
			// Live files: the same shape, not the same bytes.
			if len(got) == 0 || bytes.Count(got, []byte("\n")) == 0 {
				t.Errorf("%s: %d bytes, no lines", p, len(got))
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want %d", p, len(got), len(want))
		}
	}
	_, err := ReadFile(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("missing file: %v, want an open *fs.PathError that is fs.ErrNotExist", err)
	}
	_, err = ReadFile(dir)
	_, werr := os.ReadFile(dir)
	if err == nil || werr == nil || err.Error() != werr.Error() {
		t.Errorf("directory: %v, want os.ReadFile's %v", err, werr)
	}
}
