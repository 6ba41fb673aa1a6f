package bwrap

import (
	"strings"
	"testing"

	"github.com/heavy-duty/box/templates"
)

func boxRequest() Request {
	r := testRequest()
	r.Persistent = &Persistent{
		Name: "work", Workdir: "/home/u/src/app",
		Home:     "/home/u/.local/share/box/boxes/work/state/home",
		Instance: "/home/u/.local/share/box/boxes/work/state/instance",
	}
	return r
}

func varValue(p *Plan, name string) (string, bool) {
	for _, v := range p.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// A persistent box resolves like box run, with its own home and instance directory.
func TestResolvePersistent(t *testing.T) {
	p, err := Resolve(boxRequest(), testFacts())
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	if s.HomeDir != "/home/u/.local/share/box/boxes/work/state/home" || s.Home != "/home/u" ||
		s.InstanceDir != "/home/u/.local/share/box/boxes/work/state/instance" || s.StateDir != ".claude" {
		t.Errorf("spec = %+v", s)
	}
	if p.Policy.Box != "work" || !strings.Contains(SandboxMD(p.Policy), "kept between sessions") {
		t.Errorf("policy %+v", p.Policy)
	}
	// The env allowlist is box run's: nothing but the base enters.
	if _, ok := varValue(p, "AWS_SECRET_ACCESS_KEY"); ok {
		t.Error("AWS_SECRET_ACCESS_KEY entered a persistent box")
	}
	if v, _ := varValue(p, "CLAUDE_CONFIG_DIR"); v != "/home/u/.claude" {
		t.Errorf("CLAUDE_CONFIG_DIR = %q", v)
	}
}

// A persistent box's home is a directory on disk: no tmpfs is sized for it, the dry
// run and SANDBOX.md say so, and the scratch mounts are still each bounded.
func TestResolvePersistentHomeNotATmpfs(t *testing.T) {
	p, err := Resolve(boxRequest(), testFacts())
	if err != nil {
		t.Fatal(err)
	}
	if tf := p.Spec.Tmpfs; tf.Home != 0 || tf.Tmp <= 0 || tf.VarTmp <= 0 || tf.Shm <= 0 {
		t.Errorf("tmpfs %+v: want /tmp, /var/tmp, /dev/shm sized and no home tmpfs", tf)
	}
	line := p.LimitsLine()
	if !strings.Contains(line, "home on disk") || strings.Contains(line, "home 0") {
		t.Errorf("limits line %q: want the home named as on disk", line)
	}
	if strings.Contains(p.Policy.Limits, "`$HOME`") {
		t.Errorf("SANDBOX.md limits %q size a home that is on disk", p.Policy.Limits)
	}
	s := p.Spec
	s.InfoFD, s.BlockFD, s.SeccompFD = InfoFD, BlockFD, SeccompFD
	args, err := Args(s, debianHost)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "--tmpfs" && args[i+1] == s.Home {
			t.Errorf("a tmpfs is mounted at the box's home: %q", args)
		}
	}
	// box run's home is still a sized tmpfs.
	q, err := Resolve(testRequest(), testFacts())
	if err != nil {
		t.Fatal(err)
	}
	if q.Spec.Tmpfs.Home <= 0 || !strings.Contains(q.LimitsLine(), "home "+humanBytes(q.Spec.Tmpfs.Home)) {
		t.Errorf("box run: tmpfs %+v, line %q", q.Spec.Tmpfs, q.LimitsLine())
	}
}

func TestResolvePersistentRefusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Request, *Facts)
		want string
	}{
		{"auth passthrough", func(r *Request, f *Facts) { r.Profile.AuthPassthrough, r.Profile.Source = true, "/cfg/p.toml" },
			`profile "default" (/cfg/p.toml) sets auth_passthrough, which a bwrap box does not honour`},
		{"tool in the box home", func(r *Request, f *Facts) {
			r.Command = []string{"tool"}
			f.Tools["tool"] = ToolFact{Tool: Tool{Name: "tool", Path: "/home/u/.local/share/box/boxes/work/state/home/.local/bin/tool"}}
		}, "inside a directory the sandbox can write"},
		{"relative box home", func(r *Request, f *Facts) { r.Persistent.Home = "home" }, "must be absolute"},
		{"workdir is the home", func(r *Request, f *Facts) { f.Workdir = "/home/u" }, "holds your home directory"},
		{"workdir in box data", func(r *Request, f *Facts) { f.Workdir = "/home/u/.local/share/box/boxes/work" }, "box's own files"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, f := boxRequest(), testFacts()
			c.edit(&r, &f)
			_, err := Resolve(r, f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// The agent's layout is the template's: another agent needs no code.
func TestResolveAgentFromTemplate(t *testing.T) {
	r, f := testRequest(), testFacts()
	r.Template.Agent = &templates.Agent{StateDir: ".aider", ConfigEnv: "AIDER_HOME", Credentials: []string{"token"}}
	r.Profile.AuthPassthrough = true
	f.AuthFiles = []string{"/home/u/.aider/token"}
	p, err := Resolve(r, f)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.StateDir != ".aider" || len(p.Spec.AuthFiles) != 1 {
		t.Errorf("spec = %+v", p.Spec)
	}
	if v, _ := varValue(p, "AIDER_HOME"); v != "/home/u/.aider" {
		t.Errorf("AIDER_HOME = %q", v)
	}
	if _, ok := varValue(p, "CLAUDE_CONFIG_DIR"); ok {
		t.Error("CLAUDE_CONFIG_DIR set for another agent")
	}
	// No login on the host: the warning names the template's credential file.
	f.AuthFiles = nil
	p, _ = Resolve(r, f)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "~/.aider/token") {
		t.Errorf("warnings %q", p.Warnings)
	}
}
