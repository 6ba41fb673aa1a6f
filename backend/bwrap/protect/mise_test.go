package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMiseLoads(t *testing.T) {
	conf := `env_file = ".env.old"
[env]
APP = "dev"
_.source = "./scripts/env.sh"
_.file = [".env.mise", { path = "secrets/.env.json", redact = true }]
[tools]
node = "22"
`
	paths, notes := MiseLoads([]byte(conf), "/w/p", "/w/p")
	want := []string{"/w/p/.env.old", "/w/p/scripts/env.sh", "/w/p/.env.mise", "/w/p/secrets/.env.json"}
	if !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf("paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	// .config/mise.toml: relative to the project (its config root) and, to be safe, to
	// .config itself; {{config_root}} is the project; what box cannot resolve is said.
	conf = "[[env]]\n_.source = \"{{config_root}}/a.sh\"\n[[env]]\n_.source = [\"b.sh\", \"{{env.HOME}}/c.sh\"]\n"
	paths, notes = MiseLoads([]byte(conf), "/w/p/.config", "/w/p")
	want = []string{"/w/p/a.sh", "/w/p/b.sh", "/w/p/.config/b.sh"}
	if !slices.Equal(paths, want) || len(notes) != 1 {
		t.Errorf("paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	if _, notes = MiseLoads([]byte("[env\n"), "/w/p", "/w/p"); len(notes) != 1 {
		t.Errorf("an unparsable config is not said: %q", notes)
	}
}

// The walk finds mise's configs under each of their names, in any directory, with the
// config root mise resolves them against.
func TestMiseConfigAt(t *testing.T) {
	for _, c := range []struct{ dir, name, root string }{
		{"/w", "mise.toml", "/w"}, {"/w/pkg", ".mise.local.toml", "/w/pkg"}, {"/w", "mise.dev.toml", "/w"},
		{"/w/.config", "mise.toml", "/w"}, {"/w/.config/mise", "config.toml", "/w"}, {"/w/mise", "config.local.toml", "/w"},
		{"/w/.mise", "config.toml", "/w"}, {"/w/.config/mise/conf.d", "10-env.toml", "/w"},
		{"/w", "Cargo.toml", ""}, {"/w/src", "config.toml", ""},
	} {
		root, ok := miseConfigAt(c.dir, c.name)
		if root != c.root || ok != (c.root != "") {
			t.Errorf("%s/%s: root %q %v, want %q", c.dir, c.name, root, ok, c.root)
		}
	}
}

func TestScanMiseSources(t *testing.T) {
	wd := realTemp(t)
	os.MkdirAll(filepath.Join(wd, "scripts"), 0o755)
	os.WriteFile(filepath.Join(wd, "mise.toml"), []byte("[env]\n_.source = \"./scripts/env.sh\"\n_.file = \".env.mise\"\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "scripts", "env.sh"), []byte("export A=1\n"), 0o644)
	os.MkdirAll(filepath.Join(wd, "svc", ".config"), 0o755)
	os.WriteFile(filepath.Join(wd, "svc", ".config", "mise.toml"), []byte("[env]\n_.source = [\"../outside.sh\", \"$X/y.sh\"]\n"), 0o644)
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	want := []string{filepath.Join(wd, "scripts", "env.sh"), filepath.Join(wd, ".env.mise"), filepath.Join(wd, "outside.sh"), filepath.Join(wd, "svc", "outside.sh")}
	if !slices.Equal(tree.MiseSources, want) {
		t.Fatalf("mise sources\n got %q\nwant %q", tree.MiseSources, want)
	}
	if !strings.Contains(strings.Join(tree.Notes, "\n"), "$X/y.sh") {
		t.Errorf("the unresolvable _.source is not said: %q", tree.Notes)
	}
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ro := s.ReadOnly(); !slices.Contains(ro, want[0]) {
		t.Errorf("the sourced script (present) is not read-only: %q", ro)
	}
	audited := false
	for _, p := range s.Protected {
		audited = audited || p.Entry == "mise:source" && p.Absent && p.Path == want[1]
	}
	if !audited {
		t.Errorf("the absent _.file is not for the audit to check: %+v", s.Protected)
	}
}

// The sandbox can leave a mise config the audit does not watch (mise.dev.toml), which
// every later launch reads: one the decoder would take minutes over (100,000 nested
// inline tables ran until killed) is said and not decoded.
func TestMiseLoadsBounded(t *testing.T) {
	for _, conf := range []string{
		"a = " + strings.Repeat("{b = ", 100000) + "1" + strings.Repeat("}", 100000) + "\n",
		"a = " + strings.Repeat("[", 500000) + strings.Repeat("]", 500000) + "\n",
		strings.Repeat("# x\n", 100000),
	} {
		paths, notes := MiseLoads([]byte(conf), "/w", "/w")
		if len(paths) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "not read") {
			t.Errorf("%d bytes: paths %q, notes %q", len(conf), paths, notes)
		}
	}
	// A real config's nesting stays readable.
	if paths, notes := MiseLoads([]byte("[env]\n_.file = [{ path = \".env\" }]\n[tools]\nnode = [\"22\", \"20\"]\n"), "/w", "/w"); len(paths) != 1 || len(notes) != 0 {
		t.Errorf("paths %q, notes %q", paths, notes)
	}
}

// Many mise configs the audit does not watch (mise.x.toml in every directory) cost a
// launch at most maxMiseTotal bytes of decoding; the rest is said.
func TestScanMiseSourcesBudget(t *testing.T) {
	wd := realTemp(t)
	big := strings.Repeat("# padding\n", maxMiseConfig/10-10)
	for i := 0; i < 8; i++ {
		d := filepath.Join(wd, fmt.Sprint("d", i))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "mise.x.toml"), []byte(big), 0o644)
	}
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	if !strings.Contains(strings.Join(tree.Notes, "\n"), "more mise configs past") {
		t.Errorf("the configs past the budget are not said: %q", tree.Notes)
	}
}
