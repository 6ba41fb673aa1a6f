package main

// The live tests' names for internal/boxtest, for the live tests still here: they call
// package main in process (verbRunner, grantDrillRows), so they move when that code does.

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
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
	syncBuf = boxtest.SyncBuf
	frozen  = boxtest.Frozen
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
func (r *vmRig) info(t *testing.T, name string) infoJSON {
	t.Helper()
	res := r.ok(t, "info", name, "--json")
	var info infoJSON
	if err := json.Unmarshal([]byte(res.stdout), &info); err != nil {
		t.Fatalf("box info --json: %v\n%s", err, res.stdout)
	}
	return info
}
func (r *vmRig) exists(name string) bool   { return r.pub().Exists(name) }
func (r *vmRig) freeze(name string) frozen { r.t.Helper(); return r.pub().Freeze(name) }
