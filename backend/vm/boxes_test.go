package vm

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

var now = time.Date(2026, 7, 14, 9, 30, 0, 0, time.UTC)

func tmpl() *templates.Template {
	return &templates.Template{Name: "blank", Image: "box/debian-13", User: "dev", CPU: "2", Memory: "2GiB", Disk: "20GiB", UserData: "#cloud-config\n"}
}

// Resource precedence: the flag, then the environment, then the profile, then the
// template, then the defaults.
func TestResourcePrecedence(t *testing.T) {
	vmProf := &profiles.Profile{Name: "big", Backend: profiles.BackendVM, CPU: "8", Memory: "16GiB"}
	bare := &templates.Template{Name: "bare", Image: "x", User: "u"}
	cases := []struct {
		name          string
		o             NewOptions
		prof          *profiles.Profile
		tmpl          *templates.Template
		cpu, mem, dsk Resource
	}{
		{"template", NewOptions{}, nil, tmpl(), Resource{"2", "template"}, Resource{"2GiB", "template"}, Resource{"20GiB", "template"}},
		{"defaults", NewOptions{}, nil, bare, Resource{"4", "default"}, Resource{"8GiB", "default"}, Resource{"60GiB", "default"}},
		{"profile over template", NewOptions{}, vmProf, tmpl(), Resource{"8", "profile"}, Resource{"16GiB", "profile"}, Resource{"20GiB", "template"}},
		{"flag over all", NewOptions{CPU: "3", Disk: "30GiB"}, vmProf, tmpl(), Resource{"3", "flag"}, Resource{"16GiB", "profile"}, Resource{"30GiB", "flag"}},
		{"flag over default", NewOptions{Memory: "1GiB"}, nil, bare, Resource{"4", "default"}, Resource{"1GiB", "flag"}, Resource{"60GiB", "default"}},
		{"environment over profile and template", NewOptions{EnvCPU: "5", EnvDisk: "9GiB"}, vmProf, tmpl(), Resource{"5", "environment"}, Resource{"16GiB", "profile"}, Resource{"9GiB", "environment"}},
		{"flag over environment", NewOptions{CPU: "3", EnvCPU: "5", EnvMemory: "3GiB"}, nil, tmpl(), Resource{"3", "flag"}, Resource{"3GiB", "environment"}, Resource{"20GiB", "template"}},
	}
	for _, c := range cases {
		cpu, mem, dsk, err := Resources(c.o, c.prof, c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cpu != c.cpu || mem != c.mem || dsk != c.dsk {
			t.Errorf("%s: got %v %v %v, want %v %v %v", c.name, cpu, mem, dsk, c.cpu, c.mem, c.dsk)
		}
	}
	for _, o := range []NewOptions{{CPU: "lots"}, {CPU: "0"}, {Memory: "8 gigs"}, {Disk: "-1GiB"}, {EnvCPU: "many"}, {EnvMemory: "1 GiB"}, {EnvDisk: "big"}} {
		if _, _, _, err := Resources(o, nil, tmpl()); err == nil {
			t.Errorf("Resources(%+v) accepted", o)
		} else if u := (*UsageError)(nil); !errors.As(err, &u) {
			t.Errorf("Resources(%+v): %v is not a usage error", o, err)
		}
	}
}

func TestMintPlan(t *testing.T) {
	m, err := MintPlan(NewOptions{Name: "work", Container: true}, nil, tmpl(), "box-net", "", now)
	if err != nil {
		t.Fatal(err)
	}
	want := incus.Mint{Name: "work", Profile: "box-net", Image: "box/debian-13", CPU: "2", Memory: "2GiB", Disk: "20GiB",
		UserData: "#cloud-config\n", Template: "blank", User: "dev", Created: now, Processes: profiles.DefaultPids,
		IsolatedIDs: true}
	if m != want {
		t.Errorf("mint = %+v\nwant   %+v", m, want)
	}
	// pids: the profile's for a container; a VM takes none, and the profile's is noted.
	pids := 512
	vmProf := &profiles.Profile{Name: "dev", Backend: "vm", Pids: &pids}
	if m, _ := MintPlan(NewOptions{Name: "work", Container: true}, vmProf, tmpl(), "box-net", "", now); m.Processes != 512 {
		t.Errorf("container processes %d, want the profile's 512", m.Processes)
	}
	if m, _ := MintPlan(NewOptions{Name: "work"}, vmProf, tmpl(), "box-net", "", now); m.Processes != 0 || !strings.Contains(PidsNote(vmProf, m.VM), "pids = 512 is not applied to a VM") {
		t.Errorf("VM processes %d, note %q", m.Processes, PidsNote(vmProf, m.VM))
	}
	if PidsNote(vmProf, false) != "" || PidsNote(&profiles.Profile{Name: "x"}, true) != "" {
		t.Error("a note where nothing is dropped")
	}
	if m, _ := MintPlan(NewOptions{Name: "work"}, nil, tmpl(), "box-net", "", now); !m.VM || m.IsolatedIDs {
		t.Errorf("the default is not a VM, or a VM asks for a container's idmap: %+v", m)
	}
	bad := []struct {
		o    NewOptions
		prof *profiles.Profile
		tmpl *templates.Template
		want string
	}{
		{NewOptions{Name: "1work"}, nil, tmpl(), "digit"},
		{NewOptions{Name: "w", VM: true, Container: true}, nil, tmpl(), "exclude"},
		{NewOptions{Name: "w", Container: true}, nil, &templates.Template{Name: "k", Image: "x", User: "u", RequireVM: true}, "requires a VM"},
		{NewOptions{Name: "w"}, &profiles.Profile{Name: "default", Backend: "bwrap"}, tmpl(), "bwrap backend, not vm"},
		{NewOptions{Name: "w"}, nil, &templates.Template{Name: "tools"}, "no image"},
		{NewOptions{Name: "w"}, nil, &templates.Template{Name: "rigged", Image: "x", User: "u", BootstrapRole: "claude-box"}, "(BOX_BOOTSTRAP_ROLE=claude-box): box does not run rig roles"},
		{NewOptions{Name: "w", RigRepo: "x; rm -rf /"}, nil, &templates.Template{Name: "t", Image: "x", User: "u", UserData: "runcmd: [ @RIG_REPO@ ]"}, "RIG_REPO="},
		{NewOptions{Name: "w", RigRef: "main\nrm"}, nil, &templates.Template{Name: "t", Image: "x", User: "u", UserData: "@RIG_REF@"}, "RIG_REF="},
	}
	for _, b := range bad {
		if _, err := MintPlan(b.o, b.prof, b.tmpl, "box-net", "", now); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("MintPlan(%+v) = %v, want %q", b.o, err, b.want)
		}
	}
}

func TestTemplateName(t *testing.T) {
	p := &profiles.Profile{Template: "claude"}
	for _, c := range []struct {
		flag string
		prof *profiles.Profile
		want string
	}{{"", nil, "blank"}, {"", p, "claude"}, {"x", p, "x"}, {"", &profiles.Profile{}, "blank"}} {
		if got := TemplateName(c.flag, c.prof); got != c.want {
			t.Errorf("TemplateName(%q, %v) = %q, want %q", c.flag, c.prof, got, c.want)
		}
	}
}

func TestCloneRefusals(t *testing.T) {
	if err := CloneRefusals([]string{"name", "from", "timeout", "quiet"}); err != nil {
		t.Errorf("harmless settings refused: %v", err)
	}
	var se *backend.SettingsError
	err := CloneRefusals([]string{"name", "cpu", "from", "template"})
	if !errors.As(err, &se) || !se.Clone || se.Backend != "vm" || strings.Join(se.Settings, " ") != "cpu template" {
		t.Errorf("refusal: %#v", err)
	}
	for _, f := range []string{"profile", "memory", "disk", "vm", "container"} {
		if CloneRefusals([]string{f}) == nil {
			t.Errorf("a clone with %s accepted", f)
		}
	}
}

func TestPlacement(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if Placement(get) != "box-net" {
		t.Error("default placement")
	}
	env[PlacementEnv] = "lab-placement"
	if Placement(get) != "lab-placement" {
		t.Error("BOX_PLACEMENT_PROFILE ignored")
	}
}

func TestSummarize(t *testing.T) {
	st := &incus.InstanceState{Status: "Running", Network: map[string]incus.NetworkState{
		"eth0": {Addresses: []incus.NetworkAddress{{Family: "inet6", Address: "fe80::1", Scope: "link"}, {Family: "inet", Address: "10.0.0.5", Scope: "global"}}},
		"lo":   {Addresses: []incus.NetworkAddress{{Family: "inet", Address: "127.0.0.1", Scope: "local"}}},
	}}
	s := Summarize(incus.Instance{Name: "old", Status: "Running", Type: "container", Config: map[string]string{incus.KeyLegacy: "1"}}, st)
	if !s.Legacy || s.User != "claude" || s.Template != "claude" || s.IPv4 != "10.0.0.5" || s.Origin != "" {
		t.Errorf("legacy: %+v", s)
	}
	s = Summarize(incus.Instance{Name: "c", Status: "Stopped", Config: map[string]string{incus.KeyBox: "1", incus.KeyUser: "dev",
		incus.KeyTemplate: "blank", incus.KeyOrigin: "clone", incus.KeyOriginFrom: "a/s", incus.KeyCreated: "2026-07-14T09:30:00Z"}}, nil)
	if s.Legacy || s.User != "dev" || s.OriginFrom != "a/s" || !s.Created.Equal(now) || s.IPv4 != "" {
		t.Errorf("clone: %+v", s)
	}
}

// The entry script, run by the host's own sh: root runs the command as is, argv
// untouched; a missing user is exit 125 with box's wording; a login shell is asked for
// with -l.
func TestEntryScript(t *testing.T) {
	run := func(user string, login bool, cmd ...string) (string, int) {
		argv := EntryCommand(user, login, cmd)
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := run("root", false, "sh", "-c", `printf '%s|' "$(id -u)" "$HOME" "$USER" "$PWD" "$@"`, "x", "two words", "$HOME", "*"); code != 0 ||
		!strings.HasPrefix(out, "0|") || !strings.HasSuffix(out, "|two words|$HOME|*|") {
		t.Errorf("root: %q (exit %d)", out, code)
	}
	if out, code := run("root", false, "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exit code: %d %q", code, out)
	}
	if out, code := run("no-such-user-here", false, "true"); code != EntryExit || !strings.Contains(out, `box: error: there is no user "no-such-user-here" in this box`) {
		t.Errorf("missing user: %q (exit %d)", out, code)
	}
	if _, err := exec.LookPath("setpriv"); err == nil {
		if out, code := run("nobody", false, "id", "-un"); code != 0 || out != "nobody\n" {
			t.Errorf("nobody: %q (exit %d)", out, code)
		}
	}
}

func TestSameInstance(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := incus.Instance{Name: "work", CreatedAt: at, Config: map[string]string{KeyUUID: "u1"}}
	renamed := a
	renamed.Name = "other"
	if !SameInstance(a, renamed) {
		t.Error("a renamed instance is the same instance")
	}
	for _, b := range []incus.Instance{
		{Name: "work", CreatedAt: at, Config: map[string]string{KeyUUID: "u2"}},
		{Name: "work", CreatedAt: at.Add(time.Second), Config: map[string]string{KeyUUID: "u1"}},
	} {
		if SameInstance(a, b) {
			t.Errorf("%+v is another instance than %+v", b, a)
		}
	}
}

// A template's autostart and rig tokens are honoured, never dropped.
func TestMintPlanHonours(t *testing.T) {
	tp := tmpl()
	tp.Autostart = true
	tp.UserData = "#cloud-config\nruncmd:\n  - curl https://example.test/@RIG_REPO@/@RIG_REF@/install.sh | RIG_REF=@RIG_REF@ bash\n"
	m, err := MintPlan(NewOptions{Name: "w"}, nil, tp, "box-net", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Autostart || m.RigRepo != DefaultRigRepo || m.RigRef != DefaultRigRef ||
		m.UserData != "#cloud-config\nruncmd:\n  - curl https://example.test/heavy-duty/rig/main/install.sh | RIG_REF=main bash\n" {
		t.Errorf("mint %+v", m)
	}
	m, err = MintPlan(NewOptions{Name: "w", RigRepo: "me/rig-fork", RigRef: "feature/x"}, nil, tp, "box-net", "", now)
	if err != nil || !strings.Contains(m.UserData, "me/rig-fork/feature/x/") || m.RigRepo != "me/rig-fork" || m.RigRef != "feature/x" {
		t.Errorf("pinned: %+v, %v", m, err)
	}
	// Without tokens nothing is stamped and user-data is verbatim.
	if m, _ := MintPlan(NewOptions{Name: "w", RigRepo: "me/x"}, nil, tmpl(), "box-net", "", now); m.RigRepo != "" || m.UserData != tmpl().UserData {
		t.Errorf("no tokens: %+v", m)
	}
}
