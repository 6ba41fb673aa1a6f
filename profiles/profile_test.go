package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/strictoml"
)

func parse(t *testing.T, data string) (*Profile, error) {
	t.Helper()
	return Parse("p", "/cfg/p.toml", []byte(data))
}

func mustParse(t *testing.T, data string) *Profile {
	t.Helper()
	p, err := parse(t, data)
	if err != nil {
		t.Fatalf("Parse(%q): %v", data, err)
	}
	return p
}

func wantErr(t *testing.T, data string, wants ...string) error {
	t.Helper()
	p, err := parse(t, data)
	if err == nil {
		t.Fatalf("Parse(%q) = %+v, want an error", data, p)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Parse(%q) error %q does not contain %q", data, err, w)
		}
	}
	return err
}

func TestParseFull(t *testing.T) {
	p := mustParse(t, `
description = "everything"
backend = "vm"
template = "claude"
network = "internet"
env = ["GIT_AUTHOR_NAME", "LC_*"]
tools = ["git", "rg", "g++"]
command = ["bash", "-l"]
auth_passthrough = true
cpu = "4"
memory = "8GiB"
disk = "60GB"

[[mounts]]
path = "~/.gitconfig"

[[mounts]]
path = "/srv/data"
target = "/data"
mode = "rw"
`)
	want := &Profile{
		Name: "p", Source: "/cfg/p.toml", Description: "everything",
		Backend: "vm", Template: "claude", Network: "internet",
		Env:   []string{"GIT_AUTHOR_NAME", "LC_*"},
		Tools: []string{"git", "rg", "g++"}, Command: []string{"bash", "-l"},
		AuthPassthrough: true, CPU: "4", Memory: "8GiB", Disk: "60GB",
		Mounts: []Mount{
			{Path: "~/.gitconfig", Target: "~/.gitconfig", Mode: "ro"},
			{Path: "/srv/data", Target: "/data", Mode: "rw"},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
	if p.Mounts[0].RW() || !p.Mounts[1].RW() {
		t.Errorf("RW(): %v %v", p.Mounts[0].RW(), p.Mounts[1].RW())
	}
}

func TestParseDefaults(t *testing.T) {
	p := mustParse(t, "[[mounts]]\npath = \"/opt/x\"\n")
	if p.Backend != BackendBwrap || p.Network != NetNone || p.Template != "blank" {
		t.Errorf("defaults: backend %q network %q template %q", p.Backend, p.Network, p.Template)
	}
	if m := p.Mounts[0]; m.Mode != "ro" || m.Target != "/opt/x" {
		t.Errorf("mount defaults: %+v", m)
	}
	if p.AuthPassthrough {
		t.Error("auth passthrough defaults to on")
	}
	empty := mustParse(t, "")
	if empty.Backend != BackendBwrap || empty.Network != NetNone || empty.Template != "blank" {
		t.Errorf("empty profile: %+v", empty)
	}
}

func TestParseUnknownKey(t *testing.T) {
	for _, tc := range []struct{ data, loc, key string }{
		{"backend = \"bwrap\"\nnetwrok = \"none\"\n", "/cfg/p.toml:2:", "netwrok"},
		{"# c\n\nbogus = true\n", "/cfg/p.toml:3:", "bogus"},
		{"[[mounts]]\npath = \"/a\"\nsize = \"1G\"\n", "/cfg/p.toml:3:", "mounts.size"},
		{"network = \"none\"\n[[mounts]]\npath = \"/a\"\n[[mounts]]\npath = \"/b\"\nnetwork = \"full\"\n", "/cfg/p.toml:6:", "mounts.network"},
		{"[limits]\ncpu = 2\n", "/cfg/p.toml:1:", "limits"},
	} {
		err := wantErr(t, tc.data, tc.loc, tc.key, "unknown key")
		var uk *strictoml.UnknownKeyError
		if !errors.As(err, &uk) {
			t.Errorf("error %v is %T, want *strictoml.UnknownKeyError", err, err)
		}
	}
}

func TestParseBadType(t *testing.T) {
	wantErr(t, "backend = \"bwrap\"\ncpu = 4\n", "/cfg/p.toml:2:")
	wantErr(t, "auth_passthrough = \"yes\"\n", "/cfg/p.toml:1:")
	wantErr(t, "env = \"HOME\"\n", "/cfg/p.toml:1:")
	wantErr(t, "\n[[mounts]]\npath = [\"/a\"]\n", "/cfg/p.toml:3:")
	wantErr(t, "backend = \n", "/cfg/p.toml:1:")
}

func TestParseValidation(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`backend = "docker"`, `backend "docker"`},
		{`backend = "BWRAP"`, `backend "BWRAP"`},
		{`network = "lan"`, `network "lan"`},
		{`network = "host"`, `network "host"`},
		{`network = "None"`, `network "None"`},
		{"backend = \"vm\"\nnetwork = \"full\"", "bwrap backend only"},
		{`template = "../../etc"`, "invalid template name"},
		{`template = "a/b"`, "invalid template name"},
		{`env = ["MY VAR"]`, `env "MY VAR"`},
		{`env = ["1ABC"]`, `env "1ABC"`},
		{`env = ["*"]`, `env "*"`},
		{`env = ["A*B"]`, `env "A*B"`},
		{`env = [""]`, `env ""`},
		{`env = ["A=B"]`, `env "A=B"`},
		{"[[mounts]]\nmode = \"ro\"", "path is empty"},
		{"[[mounts]]\npath = \"relative/dir\"", `"relative/dir": want an absolute path`},
		{"[[mounts]]\npath = \"~user/x\"", "want an absolute path"},
		{"[[mounts]]\npath = \"/a\"\ntarget = \"b\"", `"b": want an absolute path`},
		{"[[mounts]]\npath = \"/a\"\nmode = \"wr\"", `mode "wr"`},
		{"[[mounts]]\npath = \"/a\"\nmode = \"RW\"", `mode "RW"`},
		{"[[mounts]]\npath = \"/a\\nb\"", "control character"},
		{"[[mounts]]\npath = \"/a\"\n[[mounts]]\npath = \"x\"", "mounts[1]"},
		{`tools = ["/bin/sh"]`, `tool "/bin/sh"`},
		{`tools = ["-rf"]`, `tool "-rf"`},
		{`command = [""]`, "program name is empty"},
		{`cpu = "0"`, `cpu "0"`},
		{`cpu = "many"`, `cpu "many"`},
		{`cpu = "2000"`, `cpu "2000"`},
		{`cpu = "+2"`, `cpu "+2"`},
		{`memory = "8G"`, `memory "8G"`},
		{`memory = "lots"`, `memory "lots"`},
		{`disk = "0GiB"`, `disk "0GiB"`},
		{`disk = "-5GiB"`, `disk "-5GiB"`},
		{`packages = ["jq"]`, `want a flake reference`},
		{`packages = ["nixpkgs#"]`, `want a flake reference`},
		{`packages = ["--impure"]`, `packages[0]: installable "--impure": starts with '-'`},
		{`packages = ["nixpkgs#jq", "a b#c"]`, `packages[1]`},
		{`packages = [""]`, `empty`},
		{`packages = [".#fmt"]`, `a relative path is read from the working directory`},
		{`packages = ["path:./tools#fmt"]`, `a relative path`},
		{`packages = ["git+file:tools?ref=main#fmt"]`, `a relative path`},
		{`packages = ["~/tools#fmt"]`, `a relative path`},
		{`path = "tiny"`, `path "tiny": want system or minimal`},
		{`nix = "host"`, `nix "host": want none, store or daemon`},
		{"backend = \"vm\"\npackages = [\"nixpkgs#jq\"]", `packages: the vm backend does not honour it`},
		{"backend = \"vm\"\npath = \"minimal\"", `path: the vm backend does not honour it`},
		{"backend = \"vm\"\nnix = \"daemon\"", `nix: the vm backend does not honour it`},
		{`allow = ["github.com"]`, `allow is the allowlist tier's`},
		{"network = \"allowlist\"\nallow = [\"*\"]", `allow "*": a wildcard`},
		{"network = \"allowlist\"\nallow = [\"@nope\"]", `no such built-in list`},
		{"network = \"allowlist\"\nallow = [\"10.0.0.1\"]", `an address is not a name`},
	} {
		err := wantErr(t, tc.data, tc.want)
		if !strings.HasPrefix(err.Error(), "/cfg/p.toml: ") {
			t.Errorf("validation error %q does not name the file", err)
		}
	}
}

func TestParseNix(t *testing.T) {
	p, err := parse(t, `packages = ["nixpkgs#jq", "path:/srv/tools#fmt", "/nix/store/abc-x"]
path = "minimal"
nix = "daemon"
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Packages) != 3 || p.Path != PathMinimal || p.Nix != NixDaemon {
		t.Errorf("got %+v", p)
	}
}

func TestParseNetworkTiers(t *testing.T) {
	for _, b := range []string{BackendBwrap, BackendVM} {
		for _, n := range Tiers {
			_, err := parse(t, "backend = \""+b+"\"\nnetwork = \""+string(n)+"\"\n")
			refused := b == BackendVM && (n == NetFull || n == NetAllowlist)
			if (err != nil) != refused {
				t.Errorf("backend %s network %s: err = %v, refused = %v", b, n, err, refused)
			}
		}
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"default", "claude", "my-profile_2", "A", "0"} {
		if err := ValidName(n); err != nil {
			t.Errorf("ValidName(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd", "-x", "_x", "a b", "a.toml", "x\n", strings.Repeat("a", 64)} {
		if err := ValidName(n); err == nil {
			t.Errorf("ValidName(%q) accepted", n)
		}
	}
}

func TestValidEnvName(t *testing.T) {
	for _, n := range []string{"HOME", "_X", "LC_*", "my_var", "A1"} {
		if err := ValidEnvName(n); err != nil {
			t.Errorf("ValidEnvName(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"", "*", "1A", "A B", "A-B", "A**", "*A", "A=1"} {
		if err := ValidEnvName(n); err == nil {
			t.Errorf("ValidEnvName(%q) accepted", n)
		}
	}
}

func TestBuiltins(t *testing.T) {
	d, err := Load(Default, "")
	if err != nil {
		t.Fatalf("Load(default): %v", err)
	}
	if d.Name != "default" || d.Source != "built-in" || d.Backend != BackendBwrap || d.Network != NetNone || d.Template != "blank" || d.AuthPassthrough {
		t.Errorf("default profile: %+v", d)
	}
	c, err := Load("claude", "")
	if err != nil {
		t.Fatalf("Load(claude): %v", err)
	}
	if c.Name != "claude" || c.Source != "built-in" || c.Template != "claude" || !c.AuthPassthrough || c.Backend != BackendBwrap {
		t.Errorf("claude profile: %+v", c)
	}
	if !Builtin("default") || !Builtin("claude") || Builtin("nope") {
		t.Error("Builtin() wrong")
	}
	// An empty user dir that does not exist changes nothing.
	if p, err := Load("claude", filepath.Join(t.TempDir(), "missing")); err != nil || p.Source != "built-in" {
		t.Errorf("Load with a missing user dir: %+v, %v", p, err)
	}
}

func TestLoadNotFound(t *testing.T) {
	_, err := Load("nope", t.TempDir())
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func TestLoadRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	// A file the traversal would reach, were names paths.
	os.WriteFile(filepath.Join(dir, "x.toml"), []byte(`description = "outside"`), 0o644)
	user := filepath.Join(dir, "profiles")
	os.Mkdir(user, 0o755)
	for _, n := range []string{"../x", "a/b", "", ".", "/etc/passwd"} {
		p, err := Load(n, user)
		if err == nil {
			t.Errorf("Load(%q) = %+v, want refused", n, p)
			continue
		}
		if errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "invalid profile name") {
			t.Errorf("Load(%q) error %q: want an invalid-name error", n, err)
		}
	}
}

func writeProfile(t *testing.T, dir, name, body string) string {
	t.Helper()
	f := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestUserProfiles(t *testing.T) {
	cfg := t.TempDir()
	dir := Dir(cfg)
	if dir != filepath.Join(cfg, "box", "profiles") {
		t.Fatalf("Dir = %q", dir)
	}
	os.MkdirAll(dir, 0o755)
	fNew := writeProfile(t, dir, "work", "description = \"mine\"\nnetwork = \"full\"\nenv = [\"GOPATH\"]\n")
	fOver := writeProfile(t, dir, "default", "description = \"my default\"\nnetwork = \"internet\"\n")
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a profile"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub.toml"), 0o755) // a directory is not a profile

	w, err := Load("work", dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.Source != fNew || w.Network != NetFull || w.Name != "work" || !reflect.DeepEqual(w.Env, []string{"GOPATH"}) {
		t.Errorf("user profile: %+v", w)
	}
	d, err := Load("default", dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != fOver || d.Description != "my default" || d.Network != NetInternet {
		t.Errorf("override: %+v", d)
	}

	list, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list {
		got = append(got, p.Name+"="+p.Source)
	}
	want := []string{"claude=built-in", "default=" + fOver, "work=" + fNew}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
}

func TestListBuiltinsOnly(t *testing.T) {
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "absent")} {
		list, err := List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range list {
			names = append(names, p.Name)
			if p.Source != "built-in" {
				t.Errorf("%s: source %q", p.Name, p.Source)
			}
		}
		if !reflect.DeepEqual(names, []string{"claude", "default"}) {
			t.Errorf("List(%q) = %v", dir, names)
		}
	}
}

func TestListFailsOnBrokenUserProfile(t *testing.T) {
	dir := t.TempDir()
	f := writeProfile(t, dir, "broken", "backend = \"bwrap\"\nnetwork = \"lan\"\n")
	_, err := List(dir)
	if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), `"lan"`) {
		t.Errorf("List with a broken profile: %v", err)
	}
	os.Remove(f)
	f = writeProfile(t, dir, "typo", "netwrok = \"none\"\n")
	if _, err := List(dir); err == nil || !strings.Contains(err.Error(), f+":1:") {
		t.Errorf("List with an unknown key: %v", err)
	}
}

func TestLoadUserDirUnreadable(t *testing.T) {
	dir := t.TempDir()
	// A directory where the profile file should be: an error, not a silent fallback.
	os.Mkdir(filepath.Join(dir, "default.toml"), 0o755)
	if p, err := Load("default", dir); err == nil {
		t.Errorf("Load = %+v, want an error for a directory named default.toml", p)
	}
}

func TestHiddenAndNUL(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".swap.toml"), []byte("junk = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := List(dir); err != nil {
		t.Errorf("a hidden file broke List: %v", err)
	}
	if _, err := Parse("x", "x.toml", []byte("command = [\"sh\", \"a\\u0000b\"]\n")); err == nil {
		t.Error("a NUL byte in command was accepted")
	}
}

// Loosening the protected set: a user profile may add paths and drop named entries; a
// built-in may not drop; bad names and paths are refused by name.
func TestProtectKeys(t *testing.T) {
	p := mustParse(t, "protect_add = [\".env\", \"scripts/hooks\"]\nprotect_drop = [\".vscode\", \"git:hooks\"]\n")
	if !reflect.DeepEqual(p.ProtectAdd, []string{".env", "scripts/hooks"}) || !reflect.DeepEqual(p.ProtectDrop, []string{".vscode", "git:hooks"}) {
		t.Errorf("%+v", p)
	}
	wantErr(t, "protect_drop = [\".nope\"]\n", "protect_drop", ".nope")
	wantErr(t, "protect_add = [\"/etc/passwd\"]\n", "protect_add", "/etc/passwd")
	wantErr(t, "protect_add = [\"../x\"]\n", "protect_add")
	if _, err := Parse("default", "built-in profile default", []byte("protect_drop = [\".vscode\"]\n")); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("a built-in profile dropped an entry: %v", err)
	}
	if _, err := Parse("default", "built-in profile default", []byte("protect_add = [\".env\"]\n")); err != nil {
		t.Errorf("a built-in may add: %v", err)
	}
}

// syscalls opts a user profile back into named groups of the bwrap filter; a built-in
// may not, and a group that guards the host cannot be named.
func TestSyscallsKey(t *testing.T) {
	p, err := Parse("dbg", "/u/.config/box/profiles/dbg.toml", []byte(`syscalls = ["ptrace", "perf"]`))
	if err != nil || len(p.Syscalls) != 2 {
		t.Fatalf("%v %v", p, err)
	}
	for src, why := range map[string]string{
		`syscalls = ["mount"]`:                      "cannot be turned off",
		`syscalls = ["nope"]`:                       "no syscall group",
		"backend = \"vm\"\nsyscalls = [\"ptrace\"]": "bwrap backend",
	} {
		if _, err := Parse("x", "/u/x.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want %q", src, err, why)
		}
	}
	if _, err := Parse("dbg", "built-in profile dbg", []byte(`syscalls = ["ptrace"]`)); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("built-in with syscalls: %v", err)
	}
}

func TestParsePids(t *testing.T) {
	p := mustParse(t, "pids = 512\n")
	if p.Pids == nil || *p.Pids != 512 {
		t.Errorf("pids: %v", p.Pids)
	}
	if p := mustParse(t, ""); p.Pids != nil {
		t.Errorf("pids set without the key: %v", *p.Pids)
	}
	// 0 is refused, not read as "the default": a setting is honoured or refused.
	for _, bad := range []string{"pids = 0\n", "pids = 15\n", "pids = -1\n", "pids = 4194305\n"} {
		wantErr(t, bad, "pids")
	}
	wantErr(t, "pids = \"100\"\n", "/cfg/p.toml:1:")
}

// isolation is a bwrap key with three values; a vm profile setting it is refused.
func TestProfileIsolation(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "bwrap": true, "landlock": true, "auto": true, "Landlock": false, "none": false} {
		p := Profile{Isolation: v}
		p.applyDefaults()
		if err := p.Validate(); (err == nil) != ok {
			t.Errorf("isolation %q: %v", v, err)
		}
	}
	vm := Profile{Backend: BackendVM, Isolation: "landlock"}
	vm.applyDefaults()
	if err := vm.Validate(); err == nil || !strings.Contains(err.Error(), "isolation") {
		t.Errorf("vm: %v", err)
	}
	var ke *KeyError
	if err := CheckKeys(UseVM, &Profile{Isolation: "landlock"}, nil); !errors.As(err, &ke) || ke.Key != "isolation" {
		t.Errorf("CheckKeys vm: %v", err)
	}
}
