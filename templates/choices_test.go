package templates

import (
	"os"
	"path/filepath"
	"testing"
)

// Completion's templates: the built-ins with their descriptions, and a broken user
// template is an error, not a shorter list.
func TestChoices(t *testing.T) {
	home := t.TempDir()
	got, err := Choices(home)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, c := range got {
		seen[c[0]] = c[1]
	}
	if seen["blank"] == "" || seen["claude"] == "" {
		t.Errorf("choices %q: want blank and claude with their descriptions", got)
	}
	bad := filepath.Join(Dir(home), "broken")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Choices(home); err == nil {
		t.Errorf("a broken template: %q, no error", got)
	}
}
