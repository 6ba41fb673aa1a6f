package bwrap

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

func testRequest() Request {
	return Request{
		Profile:  &profiles.Profile{Name: "default", Backend: "bwrap", Template: "blank", Network: NetNone},
		Template: &templates.Template{Name: "blank"},
	}
}

func testFacts() Facts {
	return Facts{
		Workdir: "/home/u/src/app", Euid: 1000, Home: "/home/u", Homes: []string{"/home/u"}, User: "u",
		BoxDirs:  []string{"/home/u/.config/box", "/home/u/.local/share/box"},
		DataHome: "/home/u/.local/share",
		Environ:  []string{"PATH=/usr/bin", "TERM=xterm", "AWS_SECRET_ACCESS_KEY=x", "HOME=/home/u"},
		Tools:    map[string]ToolFact{"sh": {Tool: Tool{Name: "sh", Path: "/usr/bin/dash"}}},
		Mounts:   map[string]MountFact{},
	}
}

func TestResolveDefault(t *testing.T) {
	p, err := Resolve(testRequest(), testFacts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Workdir != "/home/u/src/app" || p.Spec.Network != NetNone || !slices.Equal(p.Spec.Command, []string{"sh"}) {
		t.Errorf("spec = %+v", p.Spec)
	}
	if !strings.HasPrefix(p.Spec.InstanceDir, "/home/u/.local/share/box/instances/app-") {
		t.Errorf("instance dir %s", p.Spec.InstanceDir)
	}
	var names []string
	for _, v := range p.Vars {
		names = append(names, v.Name)
	}
	if slices.Contains(names, "AWS_SECRET_ACCESS_KEY") || !slices.Contains(names, "TERM") || !slices.Contains(names, "CLAUDE_CONFIG_DIR") {
		t.Errorf("vars = %v", names)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings = %v", p.Warnings)
	}
}

func TestResolveRefusals(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Request, *Facts)
		want  string
		usage bool
	}{
		{"home as workdir", func(r *Request, f *Facts) { f.Workdir = "/home/u" }, "holds your home directory", false},
		{"passwd home as workdir", func(r *Request, f *Facts) { f.Homes = append(f.Homes, "/srv/u"); f.Workdir = "/srv" }, "holds your home directory", false},
		{"box config as workdir", func(r *Request, f *Facts) { f.Workdir = "/home/u/.config/box/x" }, "box's own files", false},
		{"missing command", func(r *Request, f *Facts) { r.Command = []string{"nope"} }, `command "nope" not found`, false},
		{"command in workdir", func(r *Request, f *Facts) {
			r.Command = []string{"tool"}
			f.Tools["tool"] = ToolFact{Tool: Tool{Name: "tool", Path: "/home/u/src/app/bin/tool"}}
		}, "inside a directory the sandbox can write", false},
		{"bad --env", func(r *Request, f *Facts) { r.Env = []string{"A=B"} }, "--env", true},
		{"rw mount of box data", func(r *Request, f *Facts) {
			r.Profile.Mounts = []profiles.Mount{{Path: "/home/u/.local/share", Target: "/d", Mode: "rw"}}
			f.Mounts["/home/u/.local/share"] = MountFact{Real: "/home/u/.local/share"}
		}, "box's own files", false},
		{"mount link in workdir", func(r *Request, f *Facts) {
			r.Profile.Mounts = []profiles.Mount{{Path: "/home/u/src/app/l", Target: "/l", Mode: "ro"}}
			f.Mounts["/home/u/src/app/l"] = MountFact{Real: "/home/u/.ssh"}
		}, "a symlink", false},
		{"missing mount", func(r *Request, f *Facts) {
			r.Profile.Mounts = []profiles.Mount{{Path: "/nope", Target: "/nope", Mode: "ro"}}
			f.Mounts["/nope"] = MountFact{Err: errors.New("no such file")}
		}, "mounts /nope", false},
		{"no home", func(r *Request, f *Facts) { f.Home = "" }, "set HOME", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, f := testRequest(), testFacts()
			c.edit(&r, &f)
			_, err := Resolve(r, f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if errs.IsUsage(err) != c.usage {
				t.Errorf("usage = %v, want %v", errs.IsUsage(err), c.usage)
			}
		})
	}
}

func TestResolveWarnings(t *testing.T) {
	r, f := testRequest(), testFacts()
	r.Profile.Tools = []string{"jq"}
	f.Tools["jq"] = ToolFact{Err: &exec.Error{Name: "jq", Err: exec.ErrNotFound}}
	r.Profile.AuthPassthrough = true
	r.Env = []string{"UNSET_ONE"}
	p, err := Resolve(r, f)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings, "\n")
	for _, want := range []string{`tool "jq" is not on your PATH`, "auth passthrough: no host login", "--env UNSET_ONE: not set"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
}

// Every secret path the drill probes is refused as a working directory and warned on as
// a mount: the lists cannot drift apart, because there is one (policy.Secrets).
func TestSecretPathsRefusedAndWarned(t *testing.T) {
	for _, s := range policy.Secrets {
		for _, rel := range s.Paths {
			p := policy.Abs("/home/u", rel)
			r, f := testRequest(), testFacts()
			f.Workdir = p
			if _, err := Resolve(r, f); err == nil {
				t.Errorf("working directory %s (%s) accepted", p, s.ID)
			}
			r, f = testRequest(), testFacts()
			r.Profile.Mounts = []profiles.Mount{{Path: p, Target: "/m", Mode: "ro"}}
			f.Mounts[p] = MountFact{Real: p}
			pl, err := Resolve(r, f)
			if err != nil {
				t.Fatalf("mount %s: %v", p, err)
			}
			if !strings.Contains(strings.Join(pl.Warnings, "\n"), "which holds "+s.What) {
				t.Errorf("mount %s: warnings %q do not name %q", p, pl.Warnings, s.What)
			}
		}
	}
}

func TestResolveNix(t *testing.T) {
	envOf := func(p *Plan, name string) string {
		for _, v := range p.Vars {
			if v.Name == name {
				return v.Value
			}
		}
		return ""
	}
	r, f := testRequest(), testFacts()
	r.Profile.Packages = []string{"path:/srv/tools#fmt"}
	r.Command = []string{"fmt"}
	f.PackageBins = []string{"/nix/store/aaa-fmt/bin"}
	f.PackageCommands = map[string]bool{"fmt": true}
	p, err := Resolve(r, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := envOf(p, "PATH"); got != BinDir+":/nix/store/aaa-fmt/bin:"+systemBin {
		t.Errorf("PATH = %s", got)
	}
	if envOf(p, "NIX_REMOTE") != "" || p.Spec.NixDaemon || len(p.Warnings) != 0 {
		t.Errorf("the daemon is on without opt-in: %+v %v", p.Spec, p.Warnings)
	}

	r.Profile.Path, r.Profile.Nix = profiles.PathMinimal, profiles.NixDaemon
	f.NixTools = []Tool{{Name: "nix", Path: "/usr/bin/nix"}, {Name: "nix-shell", Path: "/usr/bin/nix"}}
	p, err = Resolve(r, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := envOf(p, "PATH"); got != BinDir+":/nix/store/aaa-fmt/bin" {
		t.Errorf("minimal PATH = %s", got)
	}
	if !slices.ContainsFunc(p.Spec.Tools, func(x Tool) bool { return x.Name == "nix-shell" }) {
		t.Errorf("minimal PATH without the Nix tools: %v", p.Spec.Tools)
	}
	if envOf(p, "NIX_REMOTE") != "daemon" || !p.Spec.NixDaemon || !strings.Contains(strings.Join(p.Warnings, "\n"), `nix = "daemon"`) {
		t.Errorf("daemon opt-in: %+v %v", p.Spec, p.Warnings)
	}
	if !strings.Contains(SandboxMD(p.Policy), "nix-daemon is reachable") {
		t.Errorf("SANDBOX.md does not say the daemon is reachable")
	}
}
