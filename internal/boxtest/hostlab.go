package boxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/drill/lab"
)

// HostLab is drill/lab's topology with a real incusd in its host namespace: the box
// bridge NATs out through the lab's router to its fake internet (203.0.113.10, DNS
// example.test), the LAN (192.168.77.10) and the host's public address (198.51.100.2)
// exist, and every packet stays in namespaces the test made.
type HostLab struct {
	Net     *lab.Lab
	Incus   *incuslab.Lab
	Box     string // the box binary (Binary)
	UnitDir string
	Config  string         // XDG_CONFIG_HOME of the box runs: its blank template names the lab image
	Conn    *nftables.Conn // the lab host namespace's nftables
}

func StartHostLab(t *testing.T) *HostLab {
	t.Helper()
	incuslab.Require(t)
	box := Binary(t)
	nl := lab.New(t)
	il := incuslab.StartWith(t, incuslab.Options{Bare: true, NetNS: nl.HostNS()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img, err := incuslab.EnsureImage(ctx, incuslab.BookwormRecipe(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := il.Client.ImportImage(ctx, img.Metadata, img.Rootfs, incuslab.ImageAlias); err != nil {
		t.Fatal(err)
	}
	ns, err := os.Open(nl.HostNS())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	// The host's templates name a local image, as on a host without an image server: the
	// drill must mint from them (the user's blank), as box new does.
	config := t.TempDir()
	if err := os.MkdirAll(filepath.Join(config, "box", "templates", "blank"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "box", "templates", "blank", "box.env"), []byte(LabBoxEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	return &HostLab{Net: nl, Incus: il, Box: box, UnitDir: filepath.Join(t.TempDir(), "systemd"), Config: config, Conn: conn}
}

// Run runs the box binary in the lab's host namespace (with its own sysfs, as on a real
// host) against the lab's incusd, and returns stdout, stderr and the exit code.
func (h *HostLab) Run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	argv := append([]string{"-m", "--propagation", "private", "nsenter", "--net=" + h.Net.HostNS(),
		"sh", "-c", `mount -t sysfs sysfs /sys && exec "$@"`, "sh", h.Box}, args...)
	cmd := exec.Command("unshare", argv...)
	cmd.Env = append(append(os.Environ(), h.Incus.Env()...), "XDG_CONFIG_HOME="+h.Config)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("box %v: %v", args, err)
	}
	t.Logf("box %s: exit %d in %s\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out.String(), errb.String())
	return out.String(), errb.String(), code
}

func (h *HostLab) MustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, _, code := h.Run(t, args...)
	if code != 0 {
		t.Fatalf("box %v: exit %d", args, code)
	}
	return out
}

// LabSetup is box setup-host as the lab runs it.
var LabSetup = []string{"setup-host", "--resolver", lab.Internet.String()}

func (h *HostLab) Setup(t *testing.T) string {
	return h.MustRun(t, append(LabSetup, "--unit-dir", h.UnitDir)...)
}

func DrillArgs(h *HostLab) []string {
	return []string{"drill", "--backend", "vm", "--json",
		"--internet-url", "http://" + lab.InternetName + "/", "--lan", lab.LANHost.String() + ":80",
		"--lan", lab.LANHostPublic.String() + ":80", // the host's own LAN in public space (198.51.100.0/24)
		"--host-port", "8080", "--unit-dir", h.UnitDir}
}

func (h *HostLab) Drill(t *testing.T) (map[string]drill.Result, int) {
	t.Helper()
	out, _, code := h.Run(t, DrillArgs(h)...)
	var rs []drill.Result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("drill output is not JSON: %v", err)
	}
	m := map[string]drill.Result{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m, code
}
