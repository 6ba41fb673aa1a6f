package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/spf13/cobra"
)

// runMain runs box in-process with args and returns stdout, stderr and the exit code.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// isolate gives box a home and config directory of its own.
func isolate(t *testing.T) (configHome string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	configHome = filepath.Join(home, ".config")
	t.Setenv("XDG_CONFIG_HOME", configHome)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	t.Setenv("BOX_PROFILE", "")
	return configHome
}

// verbs walks the command tree as help and the man pages do: every command a user can
// run (not hidden, not help, not cobra's __complete).
func verbs() []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			out = append(out, sub)
			walk(sub)
		}
	}
	walk(newRoot(newEnv(nil, nil, nil)))
	return out
}

// TestEveryVerbHasAnExample: issue 6 asks every verb's help to show one (help included).
func TestEveryVerbHasAnExample(t *testing.T) {
	root := newRoot(newEnv(nil, nil, nil))
	all := append(verbs(), root)
	if h, _, err := root.Find([]string{"help"}); err == nil && h != root {
		all = append(all, h)
	}
	for _, c := range all {
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no example", c.CommandPath())
		}
		if c != root && c.GroupID == "" && c.Name() != "help" {
			t.Errorf("%q is in no help group", c.CommandPath())
		}
	}
}

// TestCompletionScripts: each shell's script generates, names box and asks box for the
// words (__complete); what box answers for the first word is every verb, and for run's
// flags, the profiles, templates and tiers.
func TestCompletionScripts(t *testing.T) {
	isolate(t)
	marks := map[string][]string{
		"bash": {"# bash completion V2 for box", "complete -o default -F __start_box box"},
		"zsh":  {"#compdef box", "compdef _box box"},
		"fish": {"# fish completion for box", "complete -c box"},
	}
	for shell, want := range marks {
		out, stderr, code := runMain(t, "completion", shell)
		if code != 0 || stderr != "" || len(out) < 1000 {
			t.Fatalf("box completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), stderr)
		}
		for _, w := range append(want, "__complete") {
			if !strings.Contains(out, w) {
				t.Errorf("box completion %s: script lacks %q", shell, w)
			}
		}
	}

	out, _, code := runMain(t, "__complete", "")
	if code != 0 {
		t.Fatalf("box __complete '': exit %d", code)
	}
	words := completionWords(out)
	for _, v := range verbs() {
		if !slices.Contains(words, v.Name()) {
			t.Errorf("completing the first word: %q missing from %v", v.Name(), words)
		}
	}
	for args, want := range map[string][]string{
		"run --profile ":  {"claude", "default"},
		"run --template ": {"blank", "claude", "codex", "grok", "kimi"},
		"run --network ":  {"none", "allowlist", "internet", "full"},
		"completion ":     {"bash", "zsh", "fish"},
	} {
		argv := append([]string{"__complete"}, strings.Split(args, " ")...)
		out, _, _ := runMain(t, argv...)
		if got := completionWords(out); !slices.Equal(got, want) {
			t.Errorf("completing box %s: got %v, want %v", args, got, want)
		}
	}

	_, stderr, code := runMain(t, "completion", "powershell")
	if code != exitUsage || !strings.Contains(stderr, `no completion for shell "powershell"`) {
		t.Errorf("box completion powershell: exit %d, stderr %q; want a usage error", code, stderr)
	}
}

// completionWords are the words of a __complete answer (before the ":N" directive
// line), without descriptions.
func completionWords(out string) []string {
	var words []string
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			break
		}
		words = append(words, strings.SplitN(line, "\t", 2)[0])
	}
	return words
}

// TestManPages: box man DIR writes exactly one page per verb (and box.1), each a
// man page of that command with its examples.
func TestManPages(t *testing.T) {
	isolate(t)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := filepath.Join(t.TempDir(), "man", "man1")
	if _, stderr, code := runMain(t, "man", dir); code != 0 {
		t.Fatalf("box man: exit %d: %s", code, stderr)
	}
	want := []string{"box.1"}
	for _, v := range verbs() {
		want = append(want, strings.ReplaceAll(v.CommandPath(), " ", "-")+".1")
	}
	sort.Strings(want)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("man pages: got %v, want %v", got, want)
	}
	for _, name := range got {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		for _, w := range []string{`.TH "BOX" "1" "Nov 2023" "box `, ".SH NAME", ".SH EXAMPLE", ".SH SEE ALSO"} {
			if !strings.Contains(page, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
		if strings.Contains(page, "Auto generated") {
			t.Errorf("%s carries cobra's build stamp", name)
		}
	}

	if _, stderr, code := runMain(t, "man"); code != exitUsage || !strings.Contains(stderr, "box: error: man takes one directory") {
		t.Errorf("box man without DIR: exit %d, stderr %q", code, stderr)
	}
}

// decodeJSON parses a --json answer and checks its fields against docs/json.md.
var decodeJSON = boxtest.DecodeJSON

// TestProfilesJSON: box profiles --json parses back, carries the documented fields, and
// says what the table says, for built-ins and a user profile with every key.
func TestProfilesJSON(t *testing.T) {
	cfg := isolate(t)
	os.MkdirAll(filepath.Join(cfg, "box", "profiles"), 0o755)
	os.WriteFile(filepath.Join(cfg, "box", "profiles", "work.toml"), []byte(`description = "my project"
template = "claude"
network = "full"
env = ["MY_TOKEN_NAME", "MY_*"]
tools = ["git"]
command = ["make", "test"]
auth_passthrough = true
cpu = "4"
memory = "8GiB"
disk = "60GiB"
pids = 512

[[mounts]]
path = "~/datasets"

[[mounts]]
path = "/srv/out"
target = "/out"
mode = "rw"
`), 0o644)
	out, stderr, code := runMain(t, "profiles", "--json")
	if code != 0 || stderr != "" {
		t.Fatalf("box profiles --json: exit %d: %s", code, stderr)
	}
	decodeJSON(t, out, "box profiles --json")
	var ps []profileJSON
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"claude", "default", "work"}) {
		t.Fatalf("profiles: %v", names)
	}
	if d := ps[1]; d.Source != "built-in" || d.Backend != "bwrap" || d.Network != "none" || d.Template != "blank" || d.Pids != 0 {
		t.Errorf("default profile: %+v", d)
	}
	w := ps[2]
	wantMounts := []mountJSON{{"~/datasets", "~/datasets", "ro"}, {"/srv/out", "/out", "rw"}}
	if w.Source != filepath.Join(cfg, "box", "profiles", "work.toml") || w.Network != "full" || w.Template != "claude" ||
		!slices.Equal(w.Env, []string{"MY_TOKEN_NAME", "MY_*"}) || !slices.Equal(w.Command, []string{"make", "test"}) ||
		!w.AuthPassthrough || w.CPU != "4" || w.Memory != "8GiB" || w.Disk != "60GiB" || w.Pids != 512 || !slices.Equal(w.Mounts, wantMounts) {
		t.Errorf("work profile: %+v", w)
	}

	if _, stderr, code := runMain(t, "profiles", "--json", "extra"); code != exitUsage {
		t.Errorf("box profiles --json extra: exit %d, stderr %q", code, stderr)
	}
}

// TestTemplatesJSON: box templates --json parses back with the documented fields, for
// built-ins and a user template in the upstream box.env format with its extra files.
func TestTemplatesJSON(t *testing.T) {
	cfg := isolate(t)
	dir := filepath.Join(cfg, "box", "templates", "rusty")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "box.env"), []byte("BOX_DESCRIPTION=\"Rust toolchain\"\nBOX_IMAGE=\"images:debian/12/cloud\"\nBOX_USER=\"dev\"\nBOX_CPU=\"4\"\nBOX_REQUIRE_VM=\"true\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "user-data.yaml"), []byte("#cloud-config\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sandbox.md"), []byte("cargo is here\n"), 0o644)
	out, stderr, code := runMain(t, "templates", "--json")
	if code != 0 || stderr != "" {
		t.Fatalf("box templates --json: exit %d: %s", code, stderr)
	}
	decodeJSON(t, out, "box templates --json")
	var ts []templateJSON
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	if !slices.Equal(names, []string{"blank", "claude", "codex", "grok", "kimi", "rusty"}) {
		t.Fatalf("templates: %v", names)
	}
	if b := ts[0]; b.Source != "built-in" || b.Description != "A bare box: a shell and nothing else" {
		t.Errorf("blank template: %+v", b)
	}
	r := ts[5]
	if r.Source != dir || r.Description != "Rust toolchain" || r.Image != "images:debian/12/cloud" || r.User != "dev" ||
		r.CPU != "4" || !r.RequireVM || r.UserData != "#cloud-config\n" || r.Notes != "cargo is here\n" {
		t.Errorf("rusty template: %+v", r)
	}
}
