package bwrap

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

func TestSessionConfirm(t *testing.T) {
	no := func() bool { return false }
	yes := func() bool { return true }
	cases := []struct {
		name       string
		s          Session
		want, hint string // want "": launched
		prompt     bool
	}{
		{"-y", Session{Yes: true, StdinTTY: no}, "", "", false},
		{"no terminal", Session{StdinTTY: no}, "refusing to launch: no terminal to confirm the environment above",
			"review the list above and re-run with -y to launch without asking", false},
		{"no terminal func", Session{}, "refusing to launch: no terminal to confirm the environment above",
			"review the list above and re-run with -y to launch without asking", false},
		{"answered y", Session{StdinTTY: yes, Stdin: strings.NewReader(" Y \n")}, "", "", true},
		{"answered yes", Session{StdinTTY: yes, Stdin: strings.NewReader("yes\n")}, "", "", true},
		{"answered n", Session{StdinTTY: yes, Stdin: strings.NewReader("n\n")}, "not launched", "answer y to launch, or pass -y", true},
		{"no answer", Session{StdinTTY: yes, Stdin: strings.NewReader("")}, "not launched", "answer y to launch, or pass -y", true},
		{"y, then end of input", Session{StdinTTY: yes, Stdin: strings.NewReader("y")}, "", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c.s.Stderr = &stderr
			err := c.s.confirm()
			if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want || errs.HintOf(err) != c.hint) {
				t.Errorf("confirm = %v (hint %q), want %q (hint %q)", err, errs.HintOf(err), c.want, c.hint)
			}
			prompt := "box: launch the sandbox with this environment? [y/N] "
			if c.name == "no answer" || c.name == "y, then end of input" {
				prompt += "\n" // Ctrl-D: what box says next starts a line of its own
			}
			if got := stderr.String(); c.prompt && got != prompt || !c.prompt && got != "" {
				t.Errorf("stderr %q", got)
			}
		})
	}
}

// Launch without a terminal and without -y prints the audit and refuses before anything
// is snapshotted or started.
func TestSessionLaunchRefusedWithoutTerminal(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	data := t.TempDir()
	var stdout, stderr bytes.Buffer
	s := Session{Stdout: &stdout, Stderr: &stderr, StdinTTY: func() bool { return false }, Outside: Outside{DataHome: data}}
	p := &Plan{AllowRoot: true, Vars: []envaudit.Var{{Name: "TERM", Value: "xterm", Origin: "base"}}}
	code, err := s.Launch(p, Prepared{})
	if err == nil || !strings.HasPrefix(err.Error(), "refusing to launch") || code == 0 {
		t.Fatalf("Launch = %d, %v", code, err)
	}
	if !strings.HasPrefix(stderr.String(), "box: 1 environment variables enter the sandbox:\n") || stdout.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if ents, _ := os.ReadDir(data); len(ents) != 0 {
		t.Errorf("the data directory has %d entries: nothing may be snapshotted before the question", len(ents))
	}
}

// A dry run resolves and prepares on the real host and launches nothing; Prepare
// changes no decision of the plan.
func TestSessionDryRun(t *testing.T) {
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	var stdout, stderr bytes.Buffer
	s := Session{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, DryRun: true,
		Outside: Outside{
			Home: home, ConfigHome: filepath.Join(home, ".config"), DataHome: filepath.Join(home, ".local/share"),
			User: "u", Environ: []string{"PATH=/usr/bin:/bin", "TERM=xterm"},
		},
	}
	req := Request{
		Profile:  &profiles.Profile{Name: "default", Backend: "bwrap", Template: "blank", Network: NetNone},
		Template: &templates.Template{Name: "blank"}, Command: []string{"true"},
	}
	out, err := s.Run(req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Code != 0 || stdout.Len() != 0 {
		t.Errorf("code %d, stdout %q: a dry run launches nothing", out.Code, stdout.String())
	}
	if len(out.Plan.Host.System) == 0 {
		t.Errorf("the plan has no host system paths: Gather detects them")
	}
	a := out.Prepared.Args
	if i := slices.Index(a, "--info-fd"); i < 0 || a[i+1] != "3" || !slices.Contains(a, "--block-fd") || a[len(a)-1] != "true" {
		t.Errorf("args %q", a)
	}
	before := out.Plan.Spec
	if _, err := s.Prepare(out.Plan); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, out.Plan.Spec) {
		t.Errorf("Prepare changed the plan:\n%+v\n%+v", before, out.Plan.Spec)
	}
}

// A box bound to a directory that is gone fails in Gather, as a *GatherError the CLI
// words for the box.
func TestSessionGatherError(t *testing.T) {
	s := Session{Stderr: new(bytes.Buffer), Outside: Outside{Home: t.TempDir(), DataHome: t.TempDir()}}
	req := boxRequest()
	req.Persistent.Workdir = filepath.Join(t.TempDir(), "gone")
	_, err := s.Resolve(req)
	var ge *GatherError
	if !errors.As(err, &ge) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Resolve = %v, want a *GatherError", err)
	}
}

// The decisions Prepare used to make are the pure Resolve's: the fds always, and the
// tier's own resolv.conf for internet and allowlist.
func TestResolveFinal(t *testing.T) {
	for _, tier := range []Tier{NetNone, NetInternet, NetAllowlist, NetFull} {
		r := testRequest()
		r.Network = string(tier)
		f := testFacts()
		f.RunID = "run1"
		p, err := Resolve(r, f)
		if err != nil {
			t.Fatal(tier, err)
		}
		s := p.Spec
		if s.InfoFD != InfoFD || s.BlockFD != BlockFD || s.SeccompFD != SeccompFD {
			t.Errorf("%s: fds %d %d %d", tier, s.InfoFD, s.BlockFD, s.SeccompFD)
		}
		want := ""
		if tier == NetInternet || tier == NetAllowlist {
			want = filepath.Join(s.InstanceDir, "resolv.conf")
		}
		if s.ResolvConf != want {
			t.Errorf("%s: resolv.conf %q, want %q", tier, s.ResolvConf, want)
		}
	}
}
