package profiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Completion's profiles: the built-ins with their descriptions, a user profile among
// them, and a broken user profile is an error, not a shorter list.
func TestChoices(t *testing.T) {
	home := t.TempDir()
	dir := Dir(home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.toml"), []byte("description = \"my own\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Choices(home)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, c := range got {
		seen[c[0]] = c[1]
	}
	if seen["mine"] != "my own" || seen["default"] == "" {
		t.Errorf("choices %q: want mine (my own) and default with its description", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.toml"), []byte("description = \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Choices(home); err == nil {
		t.Errorf("a broken profile: %q, no error", got)
	}
}
