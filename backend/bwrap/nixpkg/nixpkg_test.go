package nixpkg

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/errs"
)

func TestParseBuild(t *testing.T) {
	got, err := parseBuild([]byte(`[{"path":"/nix/store/aaa-x"},{"drvPath":"/nix/store/b.drv","outputs":{"out":"/nix/store/bbb-y","bin":"/nix/store/ccc-y-bin"}},{"outputs":{"out":"/nix/store/aaa-x"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/nix/store/aaa-x", "/nix/store/ccc-y-bin", "/nix/store/bbb-y"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{`{}`, `[]`, `[{"outputs":{"out":"/tmp/x"}}]`, `[{"path":"/nix/store/a/../../etc"}]`, `not json`} {
		if _, err := parseBuild([]byte(bad)); err == nil {
			t.Errorf("parseBuild(%s) accepted", bad)
		}
	}
}

func TestKey(t *testing.T) {
	a, b := Key([]string{"nixpkgs#jq"}), Key([]string{"nixpkgs#jq", "nixpkgs#rg"})
	if a == b || a != Key([]string{"nixpkgs#jq"}) || Key([]string{"a#b c"}) == Key([]string{"a#b", "c"}) {
		t.Errorf("keys: %s %s", a, b)
	}
}

// No nix on the host: the error says so, with a hint, and nothing is cached.
func TestRealiseWithoutNix(t *testing.T) {
	dir := t.TempDir()
	_, fresh, err := Realiser{CacheDir: dir}.Realise(t.Context(), []string{"nixpkgs#jq"})
	if err == nil || !strings.Contains(err.Error(), "nix is not on your PATH") || errs.HintOf(err) == "" || fresh {
		t.Fatalf("err = %v, fresh = %v", err, fresh)
	}
	// A cache entry naming outputs that are gone is not used.
	key := Key([]string{"nixpkgs#jq"})
	os.WriteFile(filepath.Join(dir, key+".json"), []byte(`{"installables":["nixpkgs#jq"],"outputs":["/nix/store/gone-jq"]}`), 0o600)
	if _, _, err := (Realiser{CacheDir: dir}).Realise(t.Context(), []string{"nixpkgs#jq"}); err == nil {
		t.Error("a stale cache entry was used")
	}
	// A failing nix is a BuildError naming the installable.
	nix := filepath.Join(dir, "nix")
	os.WriteFile(nix, []byte("#!/bin/sh\necho 'error: no such flake' >&2\nexit 1\n"), 0o755)
	_, _, err = Realiser{Nix: nix, CacheDir: dir}.Realise(t.Context(), []string{"nixpkgs#jq"})
	var be *BuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "nix build nixpkgs#jq failed:\nerror: no such flake") {
		t.Errorf("err = %v", err)
	}
}
