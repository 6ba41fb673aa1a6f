package drill

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
)

func TestPortOf(t *testing.T) {
	for raw, want := range map[string]uint16{
		"http://a.test/": 80, "https://a.test/": 443, "http://a.test:8080/": 8080, "https://a.test:80/": 80,
	} {
		u, _ := url.Parse(raw)
		if got := portOf(u); got != want {
			t.Errorf("portOf(%s) = %d, want %d", raw, got, want)
		}
	}
}

// A box's own home is on the host's disk: it is not one of the sized tmpfs.
func TestBwrapLimits(t *testing.T) {
	s := bwrap.Spec{Home: "/home/op", Limits: bwrap.Limits{Pids: 7, Memory: 9},
		Tmpfs: bwrap.Tmpfs{Tmp: 1, VarTmp: 2, Shm: 3, Home: 4}}
	l := bwrapLimits(s)
	want := []TmpfsBound{{"/tmp", 1}, {"/var/tmp", 2}, {"/dev/shm", 3}, {"/home/op", 4}}
	if l.Pids != 7 || l.Memory != 9 || !slices.Equal(l.Tmpfs, want) {
		t.Errorf("run: %+v", l)
	}
	s.HomeDir = "/var/lib/box/b/home"
	if l := bwrapLimits(s); !slices.Equal(l.Tmpfs, want[:3]) {
		t.Errorf("box: %+v", l.Tmpfs)
	}
}

// The allowlist's targets need the allowlist contract; its "name not allowed" URL must
// be one the allowlist refuses. (Both are refused before any lookup.)
func TestAllowlistInputRefusals(t *testing.T) {
	in := Input{}
	o := BwrapOptions{InternetURL: "http://example.com/", UDP: "203.0.113.10:123"}
	if err := allowlistInput(&in, bwrap.Spec{Network: "internet"}, o); !errors.Is(err, ErrAllowlistTargets) {
		t.Errorf("tier internet with --udp: %v", err)
	}
	o.Expect = "internet"
	if err := allowlistInput(&in, bwrap.Spec{Network: TierAllowlist}, o); !errors.Is(err, ErrAllowlistTargets) {
		t.Errorf("judged as internet with --udp: %v", err)
	}
	if err := allowlistInput(&in, bwrap.Spec{Network: "none"}, BwrapOptions{InternetURL: "http://example.com/"}); err != nil {
		t.Errorf("tier none, no targets: %v", err)
	}
	var allowed *InternetAllowedError
	err := allowlistInput(&in, bwrap.Spec{Network: TierAllowlist, Allow: []string{"example.com"}}, BwrapOptions{InternetURL: "http://example.com/"})
	if !errors.As(err, &allowed) || allowed.URL != "http://example.com/" || allowed.Host != "example.com" {
		t.Errorf("allowed internet URL: %v", err)
	}
}

// Only the drill's own plants (under WORKDIR/.box-drill-*NONCE*) are forgotten; anything
// else keeps the quarantine and the report.
func TestForgetPlants(t *testing.T) {
	wd := t.TempDir()
	q := filepath.Join(t.TempDir(), "quarantine")
	kept := filepath.Join(q, "hook")
	os.MkdirAll(q, 0o755)
	os.WriteFile(kept, nil, 0o644)
	own := postrun.Finding{Path: filepath.Join(wd, ".box-drill-fixture-abc123", ".git", "hooks", "pre-commit"), Kept: []string{kept}}
	if forgetPlants([]string{wd}, "", "abc123", nil) {
		t.Error("no report: forgotten")
	}
	other := &postrun.Report{Quarantine: q, Findings: []postrun.Finding{own, {Path: filepath.Join(wd, ".git", "hooks", "x")}}}
	if forgetPlants([]string{wd}, "", "abc123", other) {
		t.Error("a finding of the operator's: forgotten")
	}
	if _, err := os.Stat(q); err != nil {
		t.Errorf("the quarantine went with another finding in it: %v", err)
	}
	os.WriteFile(kept, nil, 0o644)
	if !forgetPlants([]string{wd}, "", "abc123", &postrun.Report{Quarantine: q, Findings: []postrun.Finding{own}}) {
		t.Error("only the drill's plants: not forgotten")
	}
	if _, err := os.Stat(q); !os.IsNotExist(err) {
		t.Errorf("the quarantine stays: %v", err)
	}
	if forgetPlants([]string{wd}, "", "abc123", &postrun.Report{Incomplete: "files", Findings: []postrun.Finding{own}}) {
		t.Error("an incomplete audit: forgotten")
	}
}
