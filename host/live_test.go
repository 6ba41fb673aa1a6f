package host_test

// The live tests' names for internal/boxtest: the tests here were written in cmd/box
// against these unexported helpers, and kept them when they moved.

import (
	"context"
	"os/exec"
	"testing"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/backend/incus"
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
	watchPTY   = boxtest.WatchPTY
	setSize    = boxtest.SetSize
)

type (
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

// vmRig is boxtest.VMRig with the field names the tests use.
type vmRig struct {
	t      *testing.T
	lab    *incuslab.Lab
	box    string
	home   string
	tmpls  string // the user template directory
	env    []string
	ctx    context.Context
	client *incus.Client
}

func newVMRig(t *testing.T) *vmRig { return vmRigOf(boxtest.NewVMRig(t)) }

func newVMRigOn(t *testing.T, lab *incuslab.Lab) *vmRig { return vmRigOf(boxtest.NewVMRigOn(t, lab)) }

func vmRigOf(p *boxtest.VMRig) *vmRig {
	return &vmRig{t: p.T, lab: p.Lab, box: p.Box, home: p.Home, tmpls: p.Tmpls, env: p.Env, ctx: p.Ctx, client: p.Client}
}

func (r *vmRig) pub() *boxtest.VMRig {
	return &boxtest.VMRig{T: r.t, Lab: r.lab, Box: r.box, Home: r.home, Tmpls: r.tmpls, Env: r.env, Ctx: r.ctx, Client: r.client}
}

func (r *vmRig) writeFile(path, content string) { r.t.Helper(); r.pub().WriteFile(path, content) }
func (r *vmRig) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return res(r.pub().Run(t, stdin, args...))
}
func (r *vmRig) ok(t *testing.T, args ...string) result {
	t.Helper()
	return res(r.pub().OK(t, args...))
}
func (r *vmRig) fails(t *testing.T, want int, msgs []string, args ...string) result {
	t.Helper()
	return res(r.pub().Fails(t, want, msgs, args...))
}
func (r *vmRig) raw(name string, config map[string]string) { r.t.Helper(); r.pub().Raw(name, config) }
func (r *vmRig) rootExec(name string, cmd ...string) string {
	r.t.Helper()
	return r.pub().RootExec(name, cmd...)
}
func (r *vmRig) info(t *testing.T, name string) infoJSON { t.Helper(); return r.pub().Info(t, name) }
func (r *vmRig) exists(name string) bool                 { return r.pub().Exists(name) }
func (r *vmRig) freeze(name string) frozen               { r.t.Helper(); return r.pub().Freeze(name) }

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
