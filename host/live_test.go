package host_test

// The live tests' names for internal/boxtest: the tests here were written in cmd/box
// against these unexported helpers, and kept them when they moved.

import (
	"os/exec"
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

type result struct {
	code           int
	stdout, stderr string
}

func res(r boxtest.Result) result { return result{r.Code, r.Stdout, r.Stderr} }

func runResult(t testing.TB, c *exec.Cmd) result { t.Helper(); return res(boxtest.RunResult(t, c)) }

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
