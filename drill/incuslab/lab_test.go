package incuslab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

func TestRecipeHash(t *testing.T) {
	a, b := BookwormRecipe(), BookwormRecipe()
	if a.Hash() != b.Hash() {
		t.Fatal("hash of the same recipe differs")
	}
	b.Include = append(b.Include, "vim")
	if a.Hash() == b.Hash() {
		t.Error("adding a package does not change the hash")
	}
	c := BookwormRecipe()
	c.Files["/etc/systemd/network/eth0.network"] += "# changed\n"
	if a.Hash() == c.Hash() {
		t.Error("changing a file does not change the hash")
	}
	d := BookwormRecipe()
	d.Version++
	if a.Hash() == d.Hash() {
		t.Error("bumping the version does not change the hash")
	}
}

func TestMirrorFromSources(t *testing.T) {
	p := filepath.Join(t.TempDir(), "debian.sources")
	src := `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mirrorFromSources(p); got != "http://mirror.example/debian" {
		t.Errorf("mirror = %q", got)
	}
	if got := mirrorFromSources(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("missing file: %q", got)
	}
	t.Setenv("BOX_TEST_DEBIAN_MIRROR", "http://override/debian")
	if got := DebianMirror(); got != "http://override/debian" {
		t.Errorf("override: %q", got)
	}
}

func TestStaleName(t *testing.T) {
	for name, want := range map[string]bool{
		"incuslab-123-1":         true,
		"incuslab-123-1-lanhost": false, // someone else's namespace
		"boxlab-123-1":           false,
		"incuslab-x-1":           false,
	} {
		if got := staleName.MatchString(name); got != want {
			t.Errorf("staleName(%q) = %v, want %v", name, got, want)
		}
	}
}

// Two labs at once, as when several test packages run in parallel: each has its own
// daemon, namespace and bridge, and the same instance name in both does not clash.
func TestParallelLabs(t *testing.T) {
	Require(t)
	var labs [2]*Lab
	var maps [2][]incus.IDRange
	t.Run("group", func(t *testing.T) {
		for i := range labs {
			t.Run("lab", func(t *testing.T) {
				t.Parallel()
				l := Start(t)
				labs[i] = l
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				req, err := incus.MintRequest(incus.Mint{Name: "same", Profile: Profile, Image: ImageAlias,
					CPU: "1", Memory: "256MiB", Disk: "1GiB", Pool: Pool, Template: "blank", User: "dev", IsolatedIDs: true,
					Created: time.Now()})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := l.Client.Create(ctx, req); err != nil {
					t.Fatal(err)
				}
				if err := l.Client.Start(ctx, "same"); err != nil {
					t.Fatal(err)
				}
				ip, err := l.Client.WaitIPv4(ctx, "same", "eth0")
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("timing: launch to lease %s (%s)", time.Since(start).Round(time.Millisecond), ip)
				inst, _, err := l.Client.Instance(ctx, "same")
				if err != nil {
					t.Fatal(err)
				}
				if maps[i], err = incus.ParseIDMap(inst.Config[incus.KeyIDMapCurrent]); err != nil || len(maps[i]) == 0 {
					t.Errorf("%s: %s %q: %v", l.Name, incus.KeyIDMapCurrent, inst.Config[incus.KeyIDMapCurrent], err)
				}
				// The CLI aimed at the lab (Incus) sees the same daemon.
				out, err := l.Incus("exec", "same", "--", "cat", "/proc/net/route").CombinedOutput()
				if err != nil || !bytes.Contains(out, []byte("eth0")) {
					t.Errorf("incus exec via the CLI: %v: %s", err, out)
				}
			})
		}
	})
	// Each lab's incusd hands out host ids from a window of its own (idwindow.go): the
	// first container of two labs had the same host uids, and one lab's fds in flight on
	// them failed the other's container start.
	if x, y, ok := incus.UIDOverlap(maps[0], maps[1]); ok {
		t.Errorf("the two labs' first containers share host uids (%v, %v): %v / %v", x, y, maps[0], maps[1])
	}
	for _, l := range labs {
		if l == nil {
			continue
		}
		if _, err := os.Stat(l.NetNS); err == nil {
			t.Errorf("%s: network namespace left behind", l.Name)
		}
		if _, err := os.Stat(l.Dir); err == nil {
			t.Errorf("%s: lab directory left behind", l.Name)
		}
		if out, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(out), l.Dir) {
			t.Errorf("%s: mounts left behind", l.Name)
		}
	}
}

// The cloud-init image does what LAB.md measured: user-data given to Incus at create
// takes effect (the user exists) and cloud-init ends done; a copy re-runs it.
func TestCloudInitImage(t *testing.T) {
	l := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := l.ImportCloudInit(ctx); err != nil {
		t.Fatal(err)
	}
	req, err := incus.MintRequest(incus.Mint{Name: "ci", Profile: Profile, Image: CloudInitAlias,
		CPU: "1", Memory: "512MiB", Disk: "2GiB", Pool: Pool, Template: "blank", User: "dev",
		UserData: "#cloud-config\nusers:\n  - name: dev\n    shell: /bin/bash\n", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Client.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := l.Client.Start(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	run := func(cmd ...string) (int, string) {
		var out bytes.Buffer
		code, err := l.Client.Exec(ctx, "ci", incus.Exec{Command: cmd, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("exec %v: %v", cmd, err)
		}
		return code, out.String()
	}
	if code, out := run("cloud-init", "status", "--wait"); code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("cloud-init status: exit %d: %s", code, out)
	}
	if code, out := run("getent", "passwd", "dev"); code != 0 || !strings.Contains(out, "/bin/bash") {
		t.Errorf("user dev: exit %d: %s", code, out)
	}
}

// The three images share one debootstrap tree; a different debootstrap does not.
func TestRecipesShareTheirBase(t *testing.T) {
	a := BookwormRecipe()
	for _, r := range []Recipe{DebianLayoutRecipe(), CloudInitRecipe()} {
		if r.baseKey() != a.baseKey() {
			t.Errorf("recipe %s does not share the bookworm base", r.Hash())
		}
		if r.Hash() == a.Hash() {
			t.Errorf("recipe %s has the bookworm image's hash", r.Hash())
		}
	}
	b := BookwormRecipe()
	b.Include = append(b.Include, "vim")
	if b.baseKey() == a.baseKey() {
		t.Error("adding a package to debootstrap keeps the base")
	}
	c := BookwormRecipe()
	c.Variant = "buildd"
	if c.baseKey() == a.baseKey() {
		t.Error("another variant keeps the base")
	}
}
