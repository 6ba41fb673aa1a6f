package boxtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// World is a planted unprivileged user's world: a HOME with secrets and a project.
type World struct {
	T        testing.TB
	Box      string
	UID, GID int
	Home     string
	Proj     string
	Env      []string
}

// Secrets are planted in HOME; none may be readable or visible inside.
var Secrets = map[string]string{
	".ssh/id_ed25519":                   "-----BEGIN OPENSSH PRIVATE KEY-----\nPLANTED-SSH-KEY\n",
	".ssh/config":                       "Host planted-ssh-config\n",
	".aws/credentials":                  "[default]\naws_secret_access_key = PLANTED-AWS-SECRET\n",
	".gnupg/private-keys-v1.d/ABCD.key": "PLANTED-GPG-KEY\n",
	".config/gcloud/application_default_credentials.json": `{"PLANTED-GCLOUD":1}`,
	".local/share/tailscale/tailscaled.state":             "PLANTED-TAILSCALE\n",
	".config/age/keys.txt":                                "AGE-SECRET-KEY-1PLANTEDAGE\n",
	".netrc":                                              "machine x login y password PLANTED-NETRC\n",
	".git-credentials":                                    "https://u:PLANTED-GITCRED@example.com\n",
	".docker/config.json":                                 `{"auths":{"x":{"auth":"PLANTED-DOCKER"}}}`,
	".kube/config":                                        "token: PLANTED-KUBE\n",
	".config/gh/hosts.yml":                                "oauth_token: PLANTED-GH\n",
	".claude/.credentials.json":                           `{"PLANTED-CLAUDE-CREDS":1}`,
}

const PlantedToken = "ghp_PLANTEDtoken0123456789abcdefghijklmnop"

func NewWorld(t testing.TB) *World {
	t.Helper()
	testenv.RequireTool(t, "bwrap")
	uid, gid := testenv.User(t)
	box := Binary(t)
	base, err := os.MkdirTemp("", "box-world-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	w := &World{T: t, Box: box, UID: uid, GID: gid, Home: filepath.Join(base, "home")}
	w.Proj = filepath.Join(w.Home, "src", "proj")
	for rel, content := range Secrets {
		w.Write(filepath.Join(w.Home, rel), content)
	}
	w.Write(filepath.Join(w.Proj, "README"), "project file\n")
	os.Chmod(w.Home, 0o700)
	w.Env = []string{
		"HOME=" + w.Home, "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm", "LANG=C.UTF-8",
		"AWS_SECRET_ACCESS_KEY=PLANTED-ENV-AWS", "ANTHROPIC_API_KEY=sk-ant-PLANTED-ENV-KEY-000000",
		"SSH_AUTH_SOCK=/run/user/" + strconv.Itoa(uid) + "/ssh-agent.sock", "GITHUB_TOKEN=" + PlantedToken,
		"XDG_RUNTIME_DIR=/run/user/" + strconv.Itoa(uid),
	}
	return w
}

// Write creates path (and its parents) owned by the test user.
func (w *World) Write(path, content string) {
	w.T.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		w.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		w.T.Fatal(err)
	}
	for p := path; strings.HasPrefix(p, filepath.Dir(w.Home)+"/"); p = filepath.Dir(p) {
		os.Chown(p, w.UID, w.GID)
	}
}

// Result is what one run of a command did.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Cmd prepares box ARGS as the unprivileged user, in the project directory.
func (w *World) Cmd(args ...string) *exec.Cmd {
	c := exec.Command(w.Box, args...)
	c.Dir = w.Proj
	c.Env = w.Env
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.UID), Gid: uint32(w.GID)}}
	return c
}

func (w *World) Run(args ...string) Result {
	w.T.Helper()
	return w.Collect(w.Cmd(args...))
}

// Collect runs c and returns its exit code and output.
func (w *World) Collect(c *exec.Cmd) Result { return RunResult(w.T, c) }

// RunResult runs c to the end and returns its exit code and output; only a command that
// could not run at all fails the test.
func RunResult(t testing.TB, c *exec.Cmd) Result {
	t.Helper()
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%q: %v", c.Args, err)
		}
		code = ee.ExitCode()
	}
	return Result{code, o.String(), e.String()}
}

// Sh runs a shell snippet in the default sandbox (tier none).
func (w *World) Sh(script string, extra ...string) Result {
	w.T.Helper()
	return w.Run(append(append([]string{"run", "-y"}, extra...), "--", "sh", "-c", script)...)
}

// EnvWithout is env without the variable name.
func EnvWithout(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// WithProtectionOff makes w run the test build with protections off (none: restore).
func (w *World) WithProtectionOff(t testing.TB, off string) {
	w.Box = UnsafeBinary(t)
	w.Env = append(EnvWithout(w.Env, "BOX_UNSAFE_OFF"), "BOX_UNSAFE_OFF="+off)
}
