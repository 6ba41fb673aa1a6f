package drill

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	p := Plan{Probes: []Probe{
		{ID: "blocked-seen", Want: Blocked, Kind: KindPath},
		{ID: "blocked-unseen", Want: Blocked, Kind: KindPath},
		{ID: "blocked-absent-on-host", Want: Blocked, Kind: KindPath, HostAbsent: true},
		{ID: "blocked-absent-on-host-seen", Want: Blocked, Kind: KindPath, HostAbsent: true},
		{ID: "open-seen", Want: Open, Kind: KindHTTP},
		{ID: "open-unseen", Want: Open, Kind: KindHTTP},
		{ID: "allowed-seen", Want: Allowed, Kind: KindEnv},
		{ID: "allowed-unseen", Want: Allowed, Kind: KindEnv},
		{ID: "skipped", Want: Blocked, Skip: "no such thing on host"},
		{ID: "errored", Want: Blocked, Kind: KindCaps},
		{ID: "missing", Want: Blocked, Kind: KindCaps},
		{ID: "write-denied", Want: Blocked, Kind: KindWrite},
		{ID: "write-inside", Want: Blocked, Kind: KindWrite},
		{ID: "write-scratch", Want: Blocked, Kind: KindWrite, Scratch: true},
		{ID: "write-scratch-host", Want: Blocked, Kind: KindWrite, Scratch: true},
		{ID: "write-workdir", Want: Open, Kind: KindWrite},
		{ID: "write-workdir-lost", Want: Open, Kind: KindWrite},
	}}
	obs := []Observation{
		{ID: "blocked-seen", Seen: true, Detail: "readable"},
		{ID: "blocked-unseen", Detail: "absent"},
		{ID: "blocked-absent-on-host", Detail: "absent"},
		{ID: "blocked-absent-on-host-seen", Seen: true, Detail: "visible"},
		{ID: "open-seen", Seen: true, Detail: "HTTP 200"},
		{ID: "open-unseen", Detail: "unreachable"},
		{ID: "allowed-seen", Seen: true, Detail: "present"},
		{ID: "allowed-unseen", Detail: "absent"},
		{ID: "skipped", Detail: "skipped"},
		{ID: "errored", Err: "boom"},
		{ID: "write-denied", Detail: "refused (EROFS)"},
		{ID: "write-inside", Seen: true, Detail: "written"},
		{ID: "write-scratch", Seen: true, Detail: "written"},
		{ID: "write-scratch-host", Seen: true, OnHost: true, Detail: "written"},
		{ID: "write-workdir", Seen: true, OnHost: true, Detail: "written"},
		{ID: "write-workdir-lost", Seen: true, Detail: "written"},
	}
	want := map[string]Status{
		"blocked-seen": Breach, "blocked-unseen": Pass, "blocked-absent-on-host": Skip, "blocked-absent-on-host-seen": Breach,
		"open-seen": Pass, "open-unseen": Fail, "allowed-seen": Warn, "allowed-unseen": Pass, "skipped": Skip,
		"errored": Error, "missing": Error, "write-denied": Pass, "write-inside": Breach, "write-scratch": Pass,
		"write-scratch-host": Breach, "write-workdir": Pass, "write-workdir-lost": Fail,
	}
	rs := Judge(p, obs)
	if len(rs) != len(p.Probes) {
		t.Fatalf("%d results for %d probes", len(rs), len(p.Probes))
	}
	for i, r := range rs {
		if r.ID != p.Probes[i].ID {
			t.Errorf("result %d is %s: not in plan order", i, r.ID)
		}
		if r.Status != want[r.ID] {
			t.Errorf("%s: %s (%q), want %s", r.ID, r.Status, r.Observed, want[r.ID])
		}
	}
	if rs[2].Observed != "absent on host" || rs[8].Observed != "no such thing on host" || !strings.Contains(rs[14].Observed, "REACHED THE HOST") {
		t.Errorf("observed texts: %q %q %q", rs[2].Observed, rs[8].Observed, rs[14].Observed)
	}
	if !Failed(rs) {
		t.Error("Failed = false with breaches")
	}
	if got := Summary(rs); got != "6 PASS, 4 BREACH, 2 FAIL, 2 ERROR, 1 WARN, 2 SKIP" {
		t.Errorf("summary %q", got)
	}
	ok := []Result{{Status: Pass}, {Status: Warn}, {Status: Skip}}
	if Failed(ok) {
		t.Error("Failed = true with PASS, WARN and SKIP only")
	}
}

func TestRender(t *testing.T) {
	rs := []Result{
		{ID: "secret:ssh", Group: "secrets", Probe: "SSH keys (~/.ssh)", Targets: []string{"/home/op/.ssh"}, Expected: "invisible", Observed: "absent", Status: Pass},
		{ID: "net:host", Group: "network", Probe: "host's own addresses", Expected: "unreachable", Observed: "reachable:\n198.51.100.2:8080", Status: Breach},
	}
	var b bytes.Buffer
	if err := Render(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := "RESULT  PROBE                 EXPECTED     OBSERVED\n" +
		"PASS    SSH keys (~/.ssh)     invisible    absent\n" +
		"BREACH  host's own addresses  unreachable  reachable: 198.51.100.2:8080\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := RenderJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for _, f := range []string{"id", "group", "probe", "targets", "expected", "observed", "status"} {
			if _, ok := m[f]; ok {
				k = append(k, f)
			}
		}
		return k
	}
	if len(back) != 2 || !reflect.DeepEqual(keys(back[0]), []string{"id", "group", "probe", "targets", "expected", "observed", "status"}) ||
		len(back[0]) != 7 || back[1]["status"] != "BREACH" || !reflect.DeepEqual(back[1]["targets"], []any{}) {
		t.Errorf("JSON: %s", b.String())
	}
	b.Reset()
	RenderJSON(&b, nil)
	if strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("empty JSON: %q", b.String())
	}
}

func TestSettle(t *testing.T) {
	dir := t.TempDir()
	there, gone := filepath.Join(dir, "there"), filepath.Join(dir, "gone")
	os.WriteFile(there, []byte("x"), 0o600)
	p := Plan{Probes: []Probe{
		{ID: "a", Kind: KindWrite, Targets: []string{there}},
		{ID: "b", Kind: KindWrite, Targets: []string{gone}},
		{ID: "c", Kind: KindPath, Targets: []string{dir}},
	}}
	obs := Settle(p, []Observation{{ID: "a", Seen: true}, {ID: "b"}, {ID: "c"}})
	if !obs[0].OnHost || obs[1].OnHost || obs[2].OnHost {
		t.Errorf("settle: %+v", obs)
	}
	if _, err := os.Stat(there); err == nil {
		t.Error("the probe's file is still on the host")
	}
}

// RunPlan outside a sandbox, unprivileged facts only: the pure-ish probes report what a
// process here sees, and every probe gets an observation in plan order.
func TestRunPlanLocal(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "secret"), 0o700)
	t.Setenv("BOXDRILL_TEST_TOKEN", planted)
	p := Plan{MaxProcs: 2, TimeoutMs: 500, Probes: []Probe{
		{ID: "path", Kind: KindPath, Targets: []string{filepath.Join(dir, "secret"), filepath.Join(dir, "nope")}},
		{ID: "env", Kind: KindEnv, Targets: []string{"BOXDRILL_TEST_TOKEN"}},
		{ID: "scan", Kind: KindEnvScan},
		{ID: "scan-allowed", Kind: KindEnvScan, Targets: []string{"BOXDRILL_TEST_TOKEN"}},
		{ID: "write", Kind: KindWrite, Targets: []string{filepath.Join(dir, "w")}},
		{ID: "nnp", Kind: KindNoNewPrivs},
		{ID: "skip", Kind: KindCaps, Skip: "not here"},
		{ID: "bad", Kind: "nonsense"},
	}}
	obs := RunPlan(p)
	by := map[string]Observation{}
	for i, o := range obs {
		if o.ID != p.Probes[i].ID {
			t.Fatalf("observation %d is %s", i, o.ID)
		}
		by[o.ID] = o
	}
	if o := by["path"]; !o.Seen || !strings.Contains(o.Detail, "readable dir") || strings.Contains(o.Detail, "nope") {
		t.Errorf("path: %+v", o)
	}
	if o := by["env"]; !o.Seen || strings.Contains(o.Detail, planted) {
		t.Errorf("env: %+v", o)
	}
	if o := by["scan"]; !o.Seen || !strings.Contains(o.Detail, "BOXDRILL_TEST_TOKEN") || strings.Contains(o.Detail, planted) {
		t.Errorf("scan: %+v", o)
	}
	if o := by["scan-allowed"]; strings.Contains(o.Detail, "BOXDRILL_TEST_TOKEN") {
		t.Errorf("scan with the token allowlisted: %+v", o)
	}
	if o := by["write"]; !o.Seen {
		t.Errorf("write: %+v", o)
	}
	if o := by["skip"]; o.Seen || o.Err != "" {
		t.Errorf("skip: %+v", o)
	}
	if o := by["bad"]; o.Err == "" {
		t.Errorf("unknown kind: %+v", o)
	}
	var out, errb bytes.Buffer
	b, _ := json.Marshal(Plan{Probes: []Probe{{ID: "nnp", Kind: KindNoNewPrivs}}})
	if code := ProbeMain(bytes.NewReader(b), &out, &errb); code != 0 || !strings.Contains(out.String(), `"id":"nnp"`) {
		t.Errorf("ProbeMain: %d %s %s", code, out.String(), errb.String())
	}
	if code := ProbeMain(strings.NewReader("{"), &out, &errb); code != 1 {
		t.Errorf("ProbeMain on a broken plan: %d", code)
	}
}
