package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnvrcLoads(t *testing.T) {
	envrc := `# personal overrides
source_env_if_exists .envrc.local
dotenv_if_exists
dotenv config/dev.env   # the app's
[[ -f .envrc.private ]] && source .envrc.private
if [ -f "secrets.sh" ]; then . "./secrets.sh"; fi
source_env ../shared
source_env /etc/direnv/team.sh
source_env_if_exists "$HOME/.envrc.mine"
echo source_env not-a-load
export X="dotenv y"
use flake
use flake ./nix#dev
use flake github:owner/repo
use nix -p hello
use nix tools/shell.nix
PATH_add bin
`
	paths, notes := EnvrcLoads([]byte(envrc), "/w/p")
	want := []string{"/w/p/.envrc.local", "/w/p/.env", "/w/p/config/dev.env", "/w/p/.envrc.private", "/w/p/secrets.sh", "/w/shared", "/etc/direnv/team.sh",
		"/w/p/flake.nix", "/w/p/flake.lock", "/w/p/nix/flake.nix", "/w/p/nix/flake.lock", "/w/p/tools/shell.nix"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths\n got %q\nwant %q", paths, want)
	}
	if !slices.Equal(notes, []string{"source_env_if_exists $HOME/.envrc.mine"}) {
		t.Errorf("notes %q", notes)
	}
}

// Forms direnv obeys that the first reading missed (hostile review, session 19): a
// line continued with a backslash, a variable set for the command, command and
// builtin, the stdlib's use_flake and use_nix called by name, and use flake or use nix
// with options before (or instead of) the directory or file. Each left what direnv loads
// writable, for the host's next cd to obey.
func TestEnvrcLoadsForms(t *testing.T) {
	envrc := "dotenv \\\n  config/cont.env\n" +
		"DIRENV_LOG_FORMAT= source_env_if_exists .envrc.extra\n" +
		"command source extra.sh\n" +
		"builtin . more.sh\n" +
		"use_nix other.nix\n" +
		"use flake --impure\n" +
		"use nix --pure\n" +
		"use nix -p hello\n" +
		"source_up .envrc.shared\n"
	paths, _ := EnvrcLoads([]byte(envrc), "/w/q")
	want := []string{"/w/q/config/cont.env", "/w/q/.envrc.extra", "/w/q/extra.sh", "/w/q/more.sh", "/w/q/other.nix",
		"/w/q/flake.nix", "/w/q/flake.lock", "/w/q/shell.nix", "/w/q/default.nix", "/w/.envrc.shared", "/.envrc.shared"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths\n got %q\nwant %q", paths, want)
	}
}

// What an allowed .envrc loads is protected (hostile review, session 19: the sandbox's
// .envrc.local and .env ran at the host's next cd); a directory source_env names stands
// for its .envrc; what lies outside the working directory is not the sandbox's to write.
func TestScanEnvrcSources(t *testing.T) {
	wd := realTemp(t)
	os.WriteFile(filepath.Join(wd, ".envrc"), []byte("source_env_if_exists .envrc.local\ndotenv_if_exists\nsource_env sub\nsource_env ../outside\n"), 0o644)
	os.WriteFile(filepath.Join(wd, ".env"), []byte("A=1\n"), 0o644)
	os.MkdirAll(filepath.Join(wd, "sub"), 0o755)
	// An .envrc in a plain subdirectory is obeyed when you cd there.
	os.MkdirAll(filepath.Join(wd, "pkg", "api"), 0o755)
	os.WriteFile(filepath.Join(wd, "pkg", "api", ".envrc"), []byte("dotenv .env.dev\n"), 0o644)
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	want := []string{filepath.Join(wd, ".envrc.local"), filepath.Join(wd, ".env"), filepath.Join(wd, "sub", ".envrc"), filepath.Join(wd, "pkg", "api", ".env.dev")}
	if !slices.Equal(tree.EnvrcSources, want) {
		t.Fatalf("envrc sources\n got %q\nwant %q", tree.EnvrcSources, want)
	}
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ro := s.ReadOnly(); !slices.Contains(ro, filepath.Join(wd, ".env")) {
		t.Errorf(".env (present) is not read-only: %q", ro)
	}
	audited := map[string]bool{}
	for _, p := range s.Protected {
		if p.Entry == "direnv:source" && p.Absent {
			audited[p.Path] = true
		}
	}
	if !audited[filepath.Join(wd, ".envrc.local")] || !audited[filepath.Join(wd, "sub", ".envrc")] {
		t.Errorf("absent loads are not for the audit to check: %+v", s.Protected)
	}
}

// use flake names a flake beside a plain subdirectory's .envrc, which no project entry
// covers (they apply at the tops); at a top, flake.nix keeps its own entry.
func TestScanEnvrcUseFlake(t *testing.T) {
	wd := realTemp(t)
	os.WriteFile(filepath.Join(wd, ".envrc"), []byte("use flake\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "flake.nix"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(wd, "svc"), 0o755)
	os.WriteFile(filepath.Join(wd, "svc", ".envrc"), []byte("use flake .#dev\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "svc", "flake.nix"), []byte("{}\n"), 0o644)
	s, err := Build(Scan(wd, t.TempDir(), Options{}, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]string{}
	for _, p := range s.Protected {
		entry[p.Path] = p.Entry
	}
	if e := entry[filepath.Join(wd, "flake.nix")]; e != "flake.nix" {
		t.Errorf("the top's flake.nix is protected as %q, want flake.nix", e)
	}
	if e := entry[filepath.Join(wd, "svc", "flake.nix")]; e != "direnv:source" {
		t.Errorf("svc/flake.nix is protected as %q, want direnv:source", e)
	}
	if !slices.Contains(s.ReadOnly(), filepath.Join(wd, "svc", "flake.nix")) {
		t.Errorf("svc/flake.nix is not read-only: %q", s.ReadOnly())
	}
}

// The sandbox writes the .envrc files: a 1 MiB one of dotenv lines in each of three
// directories held every launch for 147 s (hostile review, session 19: a quadratic
// dedup of 227,000 names). What they name is bounded, the rest said in one note; the
// unresolvable names likewise.
func TestScanEnvrcSourcesBounded(t *testing.T) {
	wd := realTemp(t)
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "dotenv a%d\ndotenv $b%d\n", i, i)
	}
	for _, d := range []string{".", "s1", "s2"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
		os.WriteFile(filepath.Join(wd, d, ".envrc"), []byte(b.String()), 0o644)
	}
	start := time.Now()
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	if n := len(tree.EnvrcSources); n > maxEnvrcSources {
		t.Errorf("%d envrc sources protected, want at most %d", n, maxEnvrcSources)
	}
	envrcNotes, more := 0, false
	for _, n := range tree.Notes {
		if strings.Contains(n, "box cannot resolve") {
			envrcNotes++
		}
		if strings.Contains(n, "more files past the 256 box protects, from ") {
			more = true
		}
	}
	if envrcNotes > maxEnvrcNotes+1 || !more {
		t.Errorf("%d notes of unresolvable names (want at most %d), the rest said: %v", envrcNotes, maxEnvrcNotes+1, more)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("scan took %v", d)
	}
}

// An .envrc box cannot read (a link, which it does not follow) is said at launch: what
// it loads is unknown, never skipped in silence.
func TestScanEnvrcUnreadableSaid(t *testing.T) {
	wd := realTemp(t)
	os.MkdirAll(filepath.Join(wd, "pkg"), 0o755)
	os.WriteFile(filepath.Join(wd, "shared.envrc"), []byte("dotenv .env.dev\n"), 0o644)
	os.Symlink("../shared.envrc", filepath.Join(wd, "pkg", ".envrc"))
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	want := filepath.Join(wd, "pkg", ".envrc") + " cannot be read ("
	if !slices.ContainsFunc(tree.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notes %q lack %q", tree.Notes, want)
	}
}
