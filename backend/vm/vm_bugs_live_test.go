package vm_test

// The bugs a live comparison with the bash box found, and the surface its users rely
// on, proven against a real incusd (drill/incuslab, containers). Each subtest failed
// before its fix.

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
)

// debianAlias is the lab image laid out like Debian's (its build-time machine ID kept at
// /var/lib/dbus/machine-id).
const debianAlias = "box-test/bookworm-debian"

// runEnv runs box with extra environment variables.
func (r *vmRig) runEnv(t *testing.T, extra []string, args ...string) result {
	t.Helper()
	saved := r.env
	r.env = append(slices.Clone(r.env), extra...)
	defer func() { r.env = saved }()
	return r.run(t, "", args...)
}

// ptySession is box running on a pseudo-terminal, driven like a user would.
type ptySession struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  syncBuf
	tty  *os.File
	done chan error
	read chan struct{} // closed when the terminal has nothing more to show
}

func startOnPty(t *testing.T, r *vmRig, env []string, args ...string) *ptySession {
	t.Helper()
	master, slave := openPty(t)
	setSize(t, master, 30, 100)
	cmd := exec.Command(r.box, args...)
	cmd.Env = append(slices.Clone(r.env), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	s := &ptySession{t: t, cmd: cmd, tty: master, done: make(chan error, 1), read: make(chan struct{})}
	go func() {
		defer close(s.read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		master.Close()
	})
	return s
}

// expect waits until the terminal has shown want (a condition, not a timing: the
// deadline only bounds a test that would otherwise hang).
func (s *ptySession) expect(want string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.out.String(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q; it showed %q", want, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *ptySession) send(in string) {
	s.t.Helper()
	if _, err := s.tty.Write([]byte(in)); err != nil {
		s.t.Fatal(err)
	}
}

// exit waits for box to end and returns its exit code.
func (s *ptySession) exit() int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Fatalf("box did not end; the terminal showed %q", s.out.String())
	}
	// Everything box wrote before it ended, read to the end (EIO once it is gone).
	select {
	case <-s.read:
	case <-time.After(10 * time.Second):
	}
	return s.cmd.ProcessState.ExitCode()
}

// tagged creates a stopped box-tagged container the way a mint would leave one.
func (r *vmRig) tagged(name string) {
	r.t.Helper()
	req := incus.InstancesPost{Name: name, Type: incus.TypeContainer,
		Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
		Profiles: []string{incuslab.Profile},
		Config:   map[string]string{incus.KeyBox: "1", incus.KeyUser: "dev", incus.KeyTemplate: "blank"}}
	if err := r.client.Create(r.ctx, req); err != nil {
		r.t.Fatal(err)
	}
}

func (r *vmRig) config(name, key string) string {
	r.t.Helper()
	inst, _, err := r.client.Instance(r.ctx, name)
	if err != nil {
		r.t.Fatal(err)
	}
	return inst.Config[key]
}

func snapNames(info infoJSON) []string {
	var n []string
	for _, s := range info.Snapshots {
		n = append(n, s.Name)
	}
	return n
}

func TestVMBugsLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	r := newVMRig(t)
	c := r.client
	img, err := incuslab.EnsureImage(r.ctx, incuslab.DebianLayoutRecipe(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ImportImage(r.ctx, img.Metadata, img.Rootfs, debianAlias); err != nil {
		t.Fatal(err)
	}
	r.writeFile(filepath.Join(r.tmpls, "deb", "box.env"), strings.Replace(labBoxEnv, incuslab.ImageAlias, debianAlias, 1))

	t.Run("an empty host's list says there are no boxes and how to make one", func(t *testing.T) {
		res := r.ok(t, "list")
		if res.stdout != "" || !strings.Contains(res.stderr, "no boxes here yet") || !strings.Contains(res.stderr, "box new --name NAME") {
			t.Errorf("empty list: %+v", res)
		}
		if res := r.ok(t, "list", "--json"); res.stdout != "[]\n" {
			t.Errorf("empty list --json: %q", res.stdout)
		}
	})

	t.Run("boxes of a Debian-laid-out image, and their clones, get their own machine IDs", func(t *testing.T) {
		out, err := exec.Command("tar", "-xOf", img.Rootfs, "./var/lib/dbus/machine-id").Output()
		imageID := strings.TrimSpace(string(out))
		if err != nil || len(imageID) != 32 {
			t.Fatalf("the Debian-layout image keeps no dbus machine ID: %q, %v", imageID, err)
		}
		r.ok(t, "new", "--name", "src", "--template", "deb", "--container")
		names := []string{"src", "k1", "k2", "k3"}
		for _, n := range names[1:] {
			r.ok(t, "new", "--name", n, "--from", "src")
		}
		ids, ips := map[string]string{}, map[string]string{}
		for _, n := range names {
			id := strings.TrimSpace(r.rootExec(n, "cat", "/etc/machine-id"))
			if len(id) != 32 || id == imageID {
				t.Errorf("%s: machine-id %q (the image's is %s)", n, id, imageID)
			}
			if other, dup := ids[id]; dup {
				t.Errorf("%s and %s share machine-id %s", other, n, id)
			}
			ids[id] = n
			// Debian's second copy is now a link to the first, which systemd skips.
			var l strings.Builder
			if code, err := c.Exec(r.ctx, n, incus.Exec{Command: []string{"readlink", "/var/lib/dbus/machine-id"}, Stdout: &l}); code != 0 || err != nil || l.String() != "/etc/machine-id\n" {
				t.Errorf("%s: /var/lib/dbus/machine-id -> %q (exit %d, %v)", n, l.String(), code, err)
			}
			ip := r.info(t, n).IPv4
			if other, dup := ips[ip]; dup || ip == "" {
				t.Errorf("%s and %s share the lease %q", other, n, ip)
			}
			ips[ip] = n
		}
		t.Logf("image ID %s; machine IDs %v; leases %v", imageID, ids, ips)
		for _, n := range names[1:] {
			r.ok(t, "rm", n, "--force")
		}
	})

	t.Run("a mint takes pristine (dir pool: when asked), a clone keeps its source's snapshots", func(t *testing.T) {
		// src (above) was minted on the lab's dir pool without BOX_SNAPSHOT_PRISTINE.
		if s := snapNames(r.info(t, "src")); len(s) != 0 {
			t.Errorf("src on a dir pool has snapshots %v", s)
		}
		res := r.runEnv(t, []string{"BOX_SNAPSHOT_PRISTINE=yes"}, "new", "--name", "bad", "--container")
		if res.code != 2 || !strings.Contains(res.stderr, `BOX_SNAPSHOT_PRISTINE="yes": want 0 or 1`) || r.exists("bad") {
			t.Errorf("a bad BOX_SNAPSHOT_PRISTINE: %+v", res)
		}
		res = r.ok(t, "new", "--name", "skip", "--container")
		if !strings.Contains(res.stderr, `no "pristine" snapshot of skip: the storage pool is a dir pool`) || !strings.Contains(res.stderr, "BOX_SNAPSHOT_PRISTINE=1") {
			t.Errorf("the dir-pool skip is not said: %s", res.stderr)
		}
		r.ok(t, "rm", "skip", "--force")
		if res := r.runEnv(t, []string{"BOX_SNAPSHOT_PRISTINE=1"}, "new", "--name", "p1", "--container"); res.code != 0 {
			t.Fatalf("new p1: %+v", res)
		}
		if s := snapNames(r.info(t, "p1")); !slices.Equal(s, []string{"pristine"}) {
			t.Errorf("p1's snapshots: %v, want pristine", s)
		}
		r.rootExec("p1", "sh", "-c", "echo later > /root/state")
		if res := r.ok(t, "snapshot", "p1", "authed"); res.stdout != "authed\n" {
			t.Errorf("snapshot p1 authed: stdout %q", res.stdout)
		}
		idP1 := strings.TrimSpace(r.rootExec("p1", "cat", "/etc/machine-id"))
		r.ok(t, "restore", "p1", "pristine", "--force")
		if id := strings.TrimSpace(r.rootExec("p1", "cat", "/etc/machine-id")); id != idP1 {
			t.Errorf("a rollback to p1's own snapshot changed its machine ID: %s -> %s", idP1, id)
		}
		if res := r.run(t, "", "incus", "p1", "--", "exec", "{}", "--", "test", "-e", "/root/state"); res.code != 1 {
			t.Errorf("after restore to pristine, /root/state: exit %d", res.code)
		}
		r.ok(t, "new", "--name", "p1c", "--from", "p1")
		if s := snapNames(r.info(t, "p1c")); !slices.Equal(s, []string{"pristine", "authed"}) {
			t.Errorf("a clone of p1 has snapshots %v, want pristine authed", s)
		}
		// Rolling the clone back to a snapshot it inherited brings the source's disk, not
		// its identity: the machine ID is reset again.
		r.ok(t, "restore", "p1c", "authed", "--force")
		if _, err := c.WaitIPv4(r.ctx, "p1c", "eth0"); err != nil {
			t.Fatal(err)
		}
		if info := r.info(t, "p1c"); info.Origin != "clone" || info.OriginFrom != "p1" {
			t.Errorf("p1c's stamp after the restore: %+v", info)
		}
		if id := strings.TrimSpace(r.rootExec("p1c", "cat", "/etc/machine-id")); len(id) != 32 || id == idP1 {
			t.Errorf("p1c restored to an inherited snapshot has machine ID %q (p1's is %s)", id, idP1)
		}
		if info := r.info(t, "p1c"); info.State != "Running" || info.IPv4 == "" || info.IPv4 == r.info(t, "p1").IPv4 {
			t.Errorf("p1c after the restore: %+v", info)
		}
		r.ok(t, "new", "--name", "p1s", "--from", "p1/authed")
		if s := snapNames(r.info(t, "p1s")); len(s) != 0 {
			t.Errorf("a clone of a snapshot has snapshots %v", s)
		}
		r.ok(t, "rm", "p1s", "--force")
	})

	t.Run("snapshot prints its label on stdout; down stops", func(t *testing.T) {
		res := r.ok(t, "snapshot", "p1c")
		label := strings.TrimSuffix(res.stdout, "\n")
		if !strings.HasPrefix(label, "manual-") || strings.Contains(label, "\n") || !slices.Contains(snapNames(r.info(t, "p1c")), label) {
			t.Errorf("snapshot p1c: stdout %q", res.stdout)
		}
		if res := r.run(t, "", "snapshot", "p1c", "-q"); res.code != 0 || !strings.HasPrefix(res.stdout, "manual-") || res.stderr != "" {
			t.Errorf("snapshot -q: %+v", res)
		}
		r.ok(t, "down", "p1c")
		if st := r.info(t, "p1c").State; st != "Stopped" {
			t.Errorf("after down: %s", st)
		}
	})

	t.Run("tmux attaches or creates a session as the box's user", func(t *testing.T) {
		r.rootExec("p1", "useradd", "--create-home", "--shell", "/bin/bash", "dev")
		s := startOnPty(t, r, nil, "tmux", "p1", "work")
		s.expect("[work]") // tmux's status line: the session is up
		s.send("export MARK=4$((1+1)); id -un > /tmp/who; echo who-$((40+2))\r")
		s.expect("who-42")
		s.send("\x02d") // detach: Ctrl-b d
		if code := s.exit(); code != 0 {
			t.Fatalf("box tmux after detach: exit %d; %q", code, s.out.String())
		}
		if who := strings.TrimSpace(r.rootExec("p1", "cat", "/tmp/who")); who != "dev" {
			t.Errorf("the session runs as %q", who)
		}
		if ls := r.rootExec("p1", "runuser", "-u", "dev", "--", "tmux", "ls", "-F", "#{session_name}"); ls != "work\n" {
			t.Errorf("dev's sessions: %q", ls)
		}
		// The same command attaches to the session it made: what was set there is there.
		s = startOnPty(t, r, nil, "tmux", "p1", "work")
		s.send("echo mark=$MARK\r")
		s.expect("mark=42")
		s.send("exit\r")
		if code := s.exit(); code != 0 {
			t.Errorf("box tmux after exit: exit %d", code)
		}
		if res := r.run(t, "", "incus", "p1", "--", "exec", "{}", "--", "runuser", "-u", "dev", "--", "tmux", "has-session", "-t", "work"); res.code == 0 {
			t.Error("the session outlived its exit")
		}
		r.fails(t, 2, []string{`session name "a b"`}, "tmux", "p1", "a b")
	})

	t.Run("incus acts on the daemon and project box checked, whatever incus's defaults say", func(t *testing.T) {
		// A project where an instance box did not mint has the same name as the box.
		if err := c.Query(r.ctx, "POST", "/projects", map[string]any{"name": "decoy", "config": map[string]string{
			"features.images": "false", "features.profiles": "false", "features.storage.volumes": "false"}}, nil); err != nil {
			t.Fatal(err)
		}
		decoy := incus.New(r.lab.Socket)
		decoy.Project = "decoy"
		if err := decoy.Create(r.ctx, incus.InstancesPost{Name: "p1", Type: incus.TypeContainer,
			Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Profiles: []string{incuslab.Profile}, Config: map[string]string{"user.owner": "finance"}}); err != nil {
			t.Fatal(err)
		}
		userIncus := func(args ...string) string {
			cmd := exec.Command("incus", args...)
			cmd.Env = r.env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("incus %v: %v: %s", args, err, out)
			}
			return string(out)
		}
		touched := func(cl *incus.Client, name string) string {
			inst, _, err := cl.Instance(r.ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return inst.Config["user.touched"]
		}
		check := func(t *testing.T, env []string, mark string) {
			t.Helper()
			res := r.runEnv(t, env, "incus", "p1", "--", "config", "set", "{}", "user.touched="+mark)
			if res.code != 0 || !strings.Contains(res.stderr, "project default") {
				t.Errorf("box incus: %+v", res)
			}
			if got := touched(c, "p1"); got != mark {
				t.Errorf("the box's user.touched = %q, want %q", got, mark)
			}
			if got := touched(decoy, "p1"); got != "" {
				t.Errorf("the decoy project's p1 was changed: user.touched = %q", got)
			}
		}
		// The user's incus now defaults to the decoy project...
		userIncus("project", "switch", "decoy")
		if out := userIncus("config", "get", "p1", "user.owner"); out != "finance\n" {
			t.Fatalf("the switch did not take: %q", out)
		}
		check(t, nil, "project-switch")
		// ... or to another remote (the same daemon, its project decoy) ...
		userIncus("remote", "add", "elsewhere", "unix://"+r.lab.Socket)
		userIncus("remote", "switch", "elsewhere")
		userIncus("project", "switch", "elsewhere:decoy")
		check(t, nil, "remote-switch")
		// ... or the environment names a remote and a project.
		check(t, []string{"INCUS_PROJECT=decoy", "INCUS_REMOTE=elsewhere"}, "environment")
		// Without {} the box is appended.
		if res := r.ok(t, "incus", "p1", "--", "config", "show"); !strings.Contains(res.stdout, "user.touched: environment\n") {
			t.Errorf("config show without {}: %q", res.stdout)
		}
		if err := decoy.Delete(r.ctx, "p1"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("rm and restore act on the box they asked about, not on whatever has its name now", func(t *testing.T) {
		// Replaced while box asks: renamed away, and another box minted under the name.
		r.tagged("v1")
		s := startOnPty(t, r, nil, "rm", "v1")
		s.expect("[y/N]")
		if err := c.Rename(r.ctx, "v1", "v1-old"); err != nil {
			t.Fatal(err)
		}
		r.tagged("v1")
		s.send("y\r")
		if code := s.exit(); code != 1 || !strings.Contains(s.out.String(), "replaced meanwhile") {
			t.Errorf("rm of a replaced box: exit %d, %q", code, s.out.String())
		}
		if !r.exists("v1") || !r.exists("v1-old") {
			t.Errorf("rm deleted a box it did not ask about: v1 %v, v1-old %v", r.exists("v1"), r.exists("v1-old"))
		}
		// Renamed while box asks.
		s = startOnPty(t, r, nil, "rm", "v1")
		s.expect("[y/N]")
		if err := c.Rename(r.ctx, "v1", "v2"); err != nil {
			t.Fatal(err)
		}
		s.send("y\r")
		if code := s.exit(); code != 1 || !strings.Contains(s.out.String(), "went away while box was asking") || !r.exists("v2") {
			t.Errorf("rm of a renamed box: exit %d, %q", code, s.out.String())
		}
		// The answer yes on the same box still deletes it.
		s = startOnPty(t, r, nil, "rm", "v2")
		s.expect("[y/N]")
		s.send("y\r")
		if code := s.exit(); code != 0 || r.exists("v2") {
			t.Errorf("rm v2 answered y: exit %d, %q", code, s.out.String())
		}
		// restore has the same shape.
		must(t, c.CreateSnapshot(r.ctx, "v1-old", incus.SnapshotPost{Name: "s"}))
		s = startOnPty(t, r, nil, "restore", "v1-old", "s")
		s.expect("[y/N]")
		must(t, c.Rename(r.ctx, "v1-old", "v3"))
		r.tagged("v1-old")
		must(t, c.CreateSnapshot(r.ctx, "v1-old", incus.SnapshotPost{Name: "s"}))
		s.send("y\r")
		if code := s.exit(); code != 1 || !strings.Contains(s.out.String(), "replaced meanwhile") {
			t.Errorf("restore of a replaced box: exit %d, %q", code, s.out.String())
		}
		for _, n := range []string{"v1-old", "v3"} {
			r.ok(t, "rm", n, "--force")
		}
	})

	t.Run("template keys and environment are honoured or refused, never dropped", func(t *testing.T) {
		r.writeFile(filepath.Join(r.tmpls, "server", "box.env"), labBoxEnv+"BOX_AUTOSTART=\"1\"\n")
		r.writeFile(filepath.Join(r.tmpls, "rigged", "box.env"), labBoxEnv+"BOX_BOOTSTRAP_ROLE=\"claude-box\"\n")
		r.writeFile(filepath.Join(r.tmpls, "pinned", "box.env"), labBoxEnv)
		r.writeFile(filepath.Join(r.tmpls, "pinned", "user-data.yaml"), "#cloud-config\nruncmd:\n  - echo @RIG_REPO@ @RIG_REF@\n")

		// BOX_AUTOSTART: the box comes back after a host reboot; a clone keeps it.
		r.ok(t, "new", "--name", "srv", "--template", "server", "--container")
		r.ok(t, "new", "--name", "srv2", "--from", "srv")
		for _, n := range []string{"srv", "srv2"} {
			if v := r.config(n, "boot.autostart"); v != "true" {
				t.Errorf("%s: boot.autostart = %q", n, v)
			}
		}
		// BOX_BOOTSTRAP_ROLE: refused by name, nothing made.
		r.fails(t, 1, []string{"BOX_BOOTSTRAP_ROLE=claude-box", "box does not run rig roles", "user-data"}, "new", "--name", "rig", "--template", "rigged", "--container")
		if r.exists("rig") {
			t.Error("a box was minted from a template whose role box cannot run")
		}
		// @RIG_REPO@/@RIG_REF@: resolved from the environment, and stamped.
		if res := r.runEnv(t, []string{"RIG_REPO=me/rig-fork", "RIG_REF=v1.2"}, "new", "--name", "pin", "--template", "pinned", "--container"); res.code != 0 {
			t.Fatalf("new pin: %+v", res)
		}
		if ud := r.config("pin", incus.KeyUserData); !strings.Contains(ud, "echo me/rig-fork v1.2\n") {
			t.Errorf("user-data: %q", ud)
		}
		if r.config("pin", incus.KeyRigRepo) != "me/rig-fork" || r.config("pin", incus.KeyRigRef) != "v1.2" {
			t.Errorf("rig pin not stamped")
		}
		if res := r.runEnv(t, []string{"RIG_REF=main; curl evil"}, "new", "--name", "pin2", "--template", "pinned", "--container"); res.code != 2 || r.exists("pin2") {
			t.Errorf("a shell-shaped RIG_REF: %+v", res)
		}

		// BOX_CPU / BOX_MEMORY: below the flags, above the template.
		r.runEnv(t, []string{"BOX_CPU=2", "BOX_MEMORY=640MiB"}, "new", "--name", "envres", "--container", "--cpu", "1")
		if r.config("envres", incus.KeyCPU) != "1" || r.config("envres", incus.KeyMemory) != "640MiB" {
			t.Errorf("limits: cpu %q memory %q", r.config("envres", incus.KeyCPU), r.config("envres", incus.KeyMemory))
		}
		if res := r.runEnv(t, []string{"BOX_CPU=lots"}, "new", "--name", "envbad", "--container"); res.code != 2 || !strings.Contains(res.stderr, "BOX_CPU") {
			t.Errorf("BOX_CPU=lots: %+v", res)
		}
		// A clone keeps its source's resources, and says so rather than dropping BOX_CPU.
		res := r.runEnv(t, []string{"BOX_CPU=2"}, "new", "--name", "envclone", "--from", "envres")
		if res.code != 0 || !strings.Contains(res.stderr, "BOX_CPU=2 is not applied to a clone") || r.config("envclone", incus.KeyCPU) != "1" {
			t.Errorf("clone with BOX_CPU: %+v", res)
		}
		// BOX_LAUNCH_TIMEOUT: the launch's time-box, when --timeout is not given.
		if res := r.runEnv(t, []string{"BOX_LAUNCH_TIMEOUT=300ms"}, "new", "--name", "late", "--container"); res.code != 1 || !strings.Contains(res.stderr, "within 300ms") || r.exists("late") {
			t.Errorf("BOX_LAUNCH_TIMEOUT=300ms: %+v", res)
		}
		if res := r.runEnv(t, []string{"BOX_LAUNCH_TIMEOUT=soon"}, "new", "--name", "late", "--container"); res.code != 2 || !strings.Contains(res.stderr, "BOX_LAUNCH_TIMEOUT") {
			t.Errorf("BOX_LAUNCH_TIMEOUT=soon: %+v", res)
		}
		for _, n := range []string{"srv", "srv2", "pin", "envres", "envclone"} {
			r.ok(t, "rm", n, "--force")
		}
	})
}
