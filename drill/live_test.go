package drill_test

// The live tests' names for internal/boxtest: the tests here were written in cmd/box
// against these unexported helpers, and kept them when they moved.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/boxtest"
)

var secrets = boxtest.Secrets

const plantedToken = boxtest.PlantedToken

var (
	openPTY    = boxtest.OpenPTY
	envWithout = boxtest.EnvWithout
	waitFile   = boxtest.WaitFile
	plant      = boxtest.Plant
	requireLab = boxtest.RequireLab
	must       = boxtest.Must
	openPty    = boxtest.OpenPty
	setSize    = boxtest.SetSize
)

type (
	syncBuf  = boxtest.SyncBuf
	boxJSON  = boxtest.BoxJSON
	infoJSON = boxtest.InfoJSON
	frozen   = boxtest.Frozen
)

const (
	labBoxEnv   = boxtest.LabBoxEnv
	labUserData = boxtest.LabUserData
)

func boxBinary(t testing.TB) string             { return boxtest.Binary(t) }
func boxBuild(t testing.TB, tags string) string { return boxtest.Build(t, tags) }

// unsafeBoxBinary builds box with -tags boxunsafe: BOX_UNSAFE_OFF=fds,keyring,seccomp,
// terminal switches those protections off. Only tests build it.
func unsafeBoxBinary(t *testing.T) string { return boxtest.UnsafeBinary(t) }

// world is boxtest.World with the field names the tests use.
type world struct {
	t        testing.TB
	box      string
	uid, gid int
	home     string
	proj     string
	env      []string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	p := boxtest.NewWorld(t)
	return &world{t: p.T, box: p.Box, uid: p.UID, gid: p.GID, home: p.Home, proj: p.Proj, env: p.Env}
}

// pub is w as boxtest.World, as it is now (a test may change its env, box or t).
func (w *world) pub() *boxtest.World {
	return &boxtest.World{T: w.t, Box: w.box, UID: w.uid, GID: w.gid, Home: w.home, Proj: w.proj, Env: w.env}
}

// withProtectionOff makes w run the test build with protections off (none: restore).
func (w *world) withProtectionOff(t *testing.T, off string) {
	p := w.pub()
	p.WithProtectionOff(t, off)
	w.box, w.env = p.Box, p.Env
}

func (w *world) write(path, content string)   { w.t.Helper(); w.pub().Write(path, content) }
func (w *world) cmd(args ...string) *exec.Cmd { return w.pub().Cmd(args...) }
func (w *world) run(args ...string) result    { w.t.Helper(); return res(w.pub().Run(args...)) }
func (w *world) collect(c *exec.Cmd) result   { w.t.Helper(); return res(w.pub().Collect(c)) }
func (w *world) sh(script string, extra ...string) result {
	w.t.Helper()
	return res(w.pub().Sh(script, extra...))
}

type result struct {
	code           int
	stdout, stderr string
}

func res(r boxtest.Result) result { return result{r.Code, r.Stdout, r.Stderr} }

func runResult(t testing.TB, c *exec.Cmd) result { t.Helper(); return res(boxtest.RunResult(t, c)) }

// drillRun is boxtest.DrillRun with the field names the tests use.
type drillRun struct {
	code           int
	stdout, stderr string
	rows           map[string]drill.Result
	list           []drill.Result
}

func drillRunOf(r boxtest.DrillRun) drillRun {
	return drillRun{r.Code, r.Stdout, r.Stderr, r.Rows, r.List}
}

func (r drillRun) pub() boxtest.DrillRun {
	return boxtest.DrillRun{Code: r.code, Stdout: r.stdout, Stderr: r.stderr, Rows: r.rows, List: r.list}
}

func (w *world) inLab(l *lab.Lab, stdin []byte, args ...string) drillRun {
	w.t.Helper()
	return drillRunOf(w.pub().InLab(l, stdin, args...))
}

func (w *world) drill(l *lab.Lab, args ...string) drillRun {
	w.t.Helper()
	return drillRunOf(w.pub().Drill(l, args...))
}

func (r drillRun) want(t *testing.T, id string, s drill.Status) { t.Helper(); r.pub().Want(t, id, s) }
func (r drillRun) table() string                                { return r.pub().Table() }

// labWorld is a planted world whose operator runs box in the lab's host namespace.
func labWorld(t *testing.T) (*world, *lab.Lab) {
	requireLab(t)
	w := newWorld(t)
	return w, lab.New(t)
}

// hostLab is boxtest.HostLab with the field names the tests use.
type hostLab struct {
	net     *lab.Lab
	incus   *incuslab.Lab
	box     string
	unitDir string
	config  string
	conn    *nftables.Conn
}

func startHostLab(t *testing.T) *hostLab {
	t.Helper()
	p := boxtest.StartHostLab(t)
	return &hostLab{net: p.Net, incus: p.Incus, box: p.Box, unitDir: p.UnitDir, config: p.Config, conn: p.Conn}
}

func (h *hostLab) pub() *boxtest.HostLab {
	return &boxtest.HostLab{Net: h.net, Incus: h.incus, Box: h.box, UnitDir: h.unitDir, Config: h.config, Conn: h.conn}
}

var labSetup = boxtest.LabSetup

func (h *hostLab) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return h.pub().Run(t, args...)
}
func (h *hostLab) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	return h.pub().MustRun(t, args...)
}
func (h *hostLab) setup(t *testing.T) string { return h.pub().Setup(t) }
func (h *hostLab) drill(t *testing.T) (map[string]drill.Result, int) {
	t.Helper()
	return h.pub().Drill(t)
}

func drillArgs(h *hostLab) []string { return boxtest.DrillArgs(h.pub()) }

// switchDrill is the proof that a protection holds a drill row: the drill of group (tier
// none) with the protection on, where row must PASS, then in a test build with
// BOX_UNSAFE_OFF=sw, where it must report BREACH. prep (if any) readies each run's world
// before its drill; check (if any) judges more of each run.
func switchDrill(t *testing.T, sw, group, row string, prep func(w *world, l *lab.Lab), check func(off bool, w *world, r drillRun)) {
	t.Helper()
	for _, off := range []bool{false, true} {
		w, l := labWorld(t)
		if prep != nil {
			prep(w, l)
		}
		want := drill.Pass
		if off {
			w.withProtectionOff(t, sw)
			want = drill.Breach
		}
		r := w.drill(l, "--network", "none", "--group", group)
		t.Logf("box drill, %s off %v (exit %d): %s %q", sw, off, r.code, r.rows[row].Status, r.rows[row].Observed)
		r.want(t, row, want)
		if check != nil {
			check(off, w, r)
		}
	}
}

// leftNothing fails t when the drill left anything matching globs (its plants) on the
// host.
func leftNothing(t *testing.T, globs ...string) {
	t.Helper()
	var left []string
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		left = append(left, m...)
	}
	if len(left) != 0 {
		t.Errorf("left on the host: %v", left)
	}
}

// quarantineEmpty fails t when the audit's quarantine holds anything (it moved a plant
// aside for good).
func quarantineEmpty(t *testing.T, w *world) {
	t.Helper()
	_, qdir := auditDirs(w)
	if q, _ := os.ReadDir(qdir); len(q) != 0 {
		t.Errorf("left in the quarantine: %v", q)
	}
}
