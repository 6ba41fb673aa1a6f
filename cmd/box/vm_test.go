package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/vm")

var goldenTime = time.Date(2026, 7, 14, 9, 30, 0, 0, time.UTC)

// planArgv parses box new's argv as the CLI does and returns the plan, without incusd.
func planArgv(t *testing.T, args ...string) (*vm.NewPlan, error) {
	t.Helper()
	var plan *vm.NewPlan
	var perr error
	e := newEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	cmd := newNewCmdWith(e, func(r backend.MintRequest) error {
		plan, perr = e.vmBackend().Plan(r, goldenTime)
		return perr
	})
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil && perr == nil {
		return nil, err
	}
	return plan, perr
}

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "vm", name+".json")
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: request differs from the golden file\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// vmConfig writes a user template (upstream box.env) and a vm profile.
func vmConfig(t *testing.T) {
	cfg := isolate(t)
	dir := filepath.Join(cfg, "box", "templates", "rusty")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "box.env"), []byte("BOX_DESCRIPTION=\"Rust\"\nBOX_IMAGE=\"images:debian/12/cloud\"\nBOX_USER=\"rust\"\nBOX_CPU=\"6\"\nBOX_MEMORY=\"12GiB\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "user-data.yaml"), []byte("#cloud-config\nusers:\n  - name: rust\n"), 0o644)
	pdir := filepath.Join(cfg, "box", "profiles")
	os.MkdirAll(pdir, 0o755)
	os.WriteFile(filepath.Join(pdir, "heavy.toml"), []byte("backend = \"vm\"\ntemplate = \"rusty\"\ncpu = \"16\"\ndisk = \"100GiB\"\n"), 0o644)
	t.Setenv("BOX_PLACEMENT_PROFILE", "")
}

// From argv to the request box sends: the template, a profile's and the flags'
// resources in their order, VM or container, the placement profile from the env.
func TestNewRequests(t *testing.T) {
	vmConfig(t)
	cases := []struct {
		golden string
		env    string
		args   []string
	}{
		{"new-vm-blank", "", []string{"--name", "work"}},
		{"new-container-template", "", []string{"--name", "rs", "--template", "rusty", "--container"}},
		{"new-profile-flags", "lab-placement", []string{"--name", "big", "--profile", "heavy", "--memory", "32GiB"}},
	}
	for _, c := range cases {
		t.Setenv("BOX_PLACEMENT_PROFILE", c.env)
		plan, err := planArgv(t, c.args...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		m := plan.Mint
		m.Pool = "default" // read off the placement profile at run time
		req, err := incus.MintRequest(m)
		if err != nil {
			t.Fatal(err)
		}
		goldenJSON(t, c.golden, req)
	}
}

func TestNewCloneRequests(t *testing.T) {
	vmConfig(t)
	// box new --from asks incusd for its source first: a fake one has "work", so the
	// test holds whether this machine's Incus is missing, stopped or running.
	startFakeIncusd(t, func(method, path string, _ []byte) (int, any) {
		if method == "GET" && path == "/1.0/instances/work" {
			return 200, map[string]any{"name": "work", "type": "virtual-machine", "status": "Stopped"}
		}
		return 404, nil
	})
	for golden, from := range map[string]string{"clone-box": "work", "clone-snapshot": "work/authed"} {
		plan, err := planArgv(t, "--name", "feature", "--from", from)
		if err != nil || plan.Clone == nil {
			t.Fatalf("--from %s: %v", from, err)
		}
		req, err := incus.CloneRequest(*plan.Clone)
		if err != nil {
			t.Fatal(err)
		}
		goldenJSON(t, golden, req)
	}
}

// Mistakes in how box new is asked are usage errors (exit 2), caught before any call
// to incusd (there is none here: the socket does not exist).
func TestNewUsageErrors(t *testing.T) {
	vmConfig(t)
	t.Setenv("INCUS_SOCKET", filepath.Join(t.TempDir(), "none.socket"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"new"}, "box new needs --name NAME"},
		{[]string{"new", "--name", "1x"}, `invalid box name "1x": must not start with a digit`},
		{[]string{"new", "--name", "a_b"}, `invalid box name "a_b"`},
		{[]string{"new", "--name", "x", "--from", "a", "--template", "blank"}, "--from cannot be combined with --template"},
		{[]string{"new", "--name", "x", "--from", "a/s", "--cpu", "2", "--disk", "9GiB"}, "--from cannot be combined with --cpu, --disk"},
		{[]string{"new", "--name", "x", "--from", "a", "--profile", "heavy"}, "--from cannot be combined with --profile"},
		{[]string{"new", "--name", "x", "--from", "a", "--container"}, "--from cannot be combined with --container"},
		{[]string{"new", "--name", "x", "--from", "a/b/c"}, "--from: invalid snapshot name"},
		{[]string{"new", "--name", "x", "--template", "nope"}, "no such template"},
		{[]string{"new", "--name", "x", "--profile", "default", "--backend", "vm"}, `profile "default" is for the bwrap backend, not vm`},
		{[]string{"new", "--name", "x", "--backend", "lxc"}, `--backend: backend "lxc": want bwrap or vm`},
		{[]string{"new", "--name", "x", "--network", "none"}, "a vm box cannot take --network"},
		{[]string{"new", "--name", "x", "--backend", "bwrap", "--cpu", "2", "--container"}, "a bwrap box cannot take --container, --cpu"},
		{[]string{"new", "--name", "x", "--profile", "nope"}, "no such profile"},
		{[]string{"new", "--name", "x", "--cpu", "many"}, "--cpu"},
		{[]string{"new", "--name", "x", "--memory", "lots"}, "--memory"},
		{[]string{"new", "--name", "x", "--vm", "--container"}, "--vm and --container exclude each other"},
		{[]string{"new", "--name", "x", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"exec", "work"}, "exec takes a box and a command"},
		{[]string{"exec", "1work", "--", "true"}, "invalid box name"},
		{[]string{"incus", "work"}, "incus takes a box and incus arguments"},
		{[]string{"info"}, "info takes one box, got 0"},
		{[]string{"rename", "a"}, "rename takes the old and the new name"},
		{[]string{"rename", "a", "b_c"}, `invalid box name "b_c"`},
		{[]string{"snapshot", "a", "b", "c"}, "snapshot takes a box and an optional label"},
		{[]string{"snapshot", "a", "x/y"}, `invalid snapshot name "x/y"`},
		{[]string{"restore", "a", "x y"}, `invalid snapshot name "x y"`},
		{[]string{"list", "extra"}, "list takes no arguments"},
		{[]string{"new", "agent", "--backend", "bwrap"}, "new takes the box's name as --name, got \"agent\"\nbox: hint: box new --name agent (with the same flags)"},
	} {
		_, stderr, code := runMain(t, c.args...)
		want := exitUsage
		if runners[c.args[0]] {
			want = exitBox // a runner's own failure (main.go)
		}
		if code != want || !strings.HasPrefix(stderr, "box: error: ") || !strings.Contains(stderr, c.want) {
			t.Errorf("box %v: exit %d, stderr %q; want exit 2 with %q", c.args, code, stderr, c.want)
		}
	}
}

// Without incusd, every vm verb says so with a way to find out why.
func TestNoDaemon(t *testing.T) {
	isolate(t)
	sock := filepath.Join(t.TempDir(), "unix.socket")
	t.Setenv("INCUS_SOCKET", sock)
	oldGroups := vmUser.groups // a user who could have vm boxes (TestListNoIncusNag)
	defer func() { vmUser.groups = oldGroups }()
	vmUser.groups = func() []string { return []string{"incus"} }
	// box list still lists the bwrap boxes, and says the vm ones are not listed.
	if _, stderr, code := runMain(t, "list"); code != exitOK || !strings.Contains(stderr, "box: warning: vm boxes not listed: no incusd socket at "+sock) {
		t.Errorf("box list without incusd: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{{"info", "work"}, {"exec", "work", "--", "true"}, {"rm", "work", "--force"}, {"new", "--name", "work", "--container"}} {
		_, stderr, code := runMain(t, args...)
		want := exitFail
		if runners[args[0]] {
			want = exitBox
		}
		if code != want || !strings.Contains(stderr, "box: error: Incus is not running here (no socket at "+sock+")\nbox: hint: start incusd") {
			t.Errorf("box %v without incusd: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// The escape hatch refuses arguments that would aim incus at another project or remote,
// where the checked name may be an instance box never minted; before any call.
func TestIncusHatchElsewhere(t *testing.T) {
	t.Setenv("INCUS_SOCKET", filepath.Join(t.TempDir(), "none.socket"))
	for _, args := range [][]string{
		{"incus", "work", "--", "--project", "other", "config", "show", "{}"},
		{"incus", "work", "--", "--project=other", "delete", "{}"},
		{"incus", "work", "--", "config", "show", "otherremote:{}"},
	} {
		var o, e bytes.Buffer
		if code := Main(args, strings.NewReader(""), &o, &e); code != exitUsage || !strings.Contains(e.String(), "another project or remote") {
			t.Errorf("%q: exit %d: %s", args, code, e.String())
		}
	}
}

// box list on a machine where Incus is installed but incusd is not running warned at
// every list, also to a user who cannot have a vm box here (field review, session 21: a
// bwrap-only user on a machine whose CI runs its own incusd). It warns when the user could
// have vm boxes: root, a member of incus-admin or incus, or one of their profiles names
// the vm backend.
func TestListNoIncusNag(t *testing.T) {
	configHome := isolate(t)
	sock := filepath.Join(t.TempDir(), "unix.socket") // its directory exists: installed
	t.Setenv("INCUS_SOCKET", sock)
	oldUID, oldGroups := vmUser.uid, vmUser.groups
	defer func() { vmUser.uid, vmUser.groups = oldUID, oldGroups }()
	vmUser.uid = func() int { return 4242 }
	vmUser.groups = func() []string { return []string{"users"} }
	warning := "box: warning: vm boxes not listed"
	if _, stderr, code := runMain(t, "list"); code != exitOK || strings.Contains(stderr, warning) {
		t.Errorf("box list, a user with no way to vm boxes: exit %d, stderr %q; want no warning", code, stderr)
	}
	vmUser.groups = func() []string { return []string{"users", "incus"} }
	if _, stderr, _ := runMain(t, "list"); !strings.Contains(stderr, warning) {
		t.Errorf("box list, a member of incus: stderr %q; want the warning", stderr)
	}
	vmUser.groups = func() []string { return nil }
	if err := os.MkdirAll(filepath.Join(configHome, "box", "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configHome, "box", "profiles", "big.toml"), []byte("backend = \"vm\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ := runMain(t, "list"); !strings.Contains(stderr, warning) {
		t.Errorf("box list, a profile names vm: stderr %q; want the warning", stderr)
	}
}
