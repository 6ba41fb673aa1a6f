package vm_test

// box export and box import for real, against the lab's incusd: a round trip with
// snapshots, a fresh identity and the import stamp; the tag boundary and the box shape
// on both sides; a name clash refused before the upload; an upload cut short (Ctrl-C,
// and a killed box) leaves no half box.

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill/incuslab"
)

func TestVMExportImportLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	r := newVMRig(t)
	c := r.client
	dir := t.TempDir()
	file := func(n string) string { return filepath.Join(dir, n) }

	r.ok(t, "new", "--name", "src", "--container")
	r.rootExec("src", "useradd", "--create-home", "--shell", "/bin/bash", "dev")
	r.rootExec("src", "sh", "-c", "echo logged-in > /home/dev/.token-stand-in")
	r.ok(t, "snapshot", "src", "authed")
	srcID := strings.TrimSpace(r.rootExec("src", "cat", "/etc/machine-id"))
	srcInst, _, err := c.Instance(r.ctx, "src")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a running box is refused", func(t *testing.T) {
		r.fails(t, 1, []string{`box "src" is running`, "box stop src"}, "export", "src", file("running.tar.gz"))
		if _, err := os.Stat(file("running.tar.gz")); err == nil {
			t.Error("a file was written")
		}
	})
	r.ok(t, "stop", "src")

	t.Run("export writes one private file, says it holds credentials, leaves no backup in incusd", func(t *testing.T) {
		res := r.ok(t, "export", "src", file("src.tar.gz"))
		for _, m := range []string{"ENTIRE disk", "agent logins, git credentials, SSH keys", "treat the file as a credential", "exported src with its snapshots"} {
			if !strings.Contains(res.stderr, m) {
				t.Errorf("stderr lacks %q:\n%s", m, res.stderr)
			}
		}
		st, err := os.Stat(file("src.tar.gz"))
		if err != nil || st.Mode().Perm() != 0o600 || st.Size() < 1<<20 {
			t.Fatalf("export file: %v, %v", st, err)
		}
		var backups []string
		if err := c.Query(r.ctx, "GET", "/instances/src/backups", nil, &backups); err != nil || len(backups) != 0 {
			t.Errorf("backups left in incusd: %v %v", backups, err)
		}
		r.fails(t, 1, []string{"already exists", "never overwrites"}, "export", "src", file("src.tar.gz"))
		r.ok(t, "export", "src", file("src-only.tar.gz"), "--instance-only")
	})

	t.Run("a name clash is refused before anything is uploaded", func(t *testing.T) {
		// Only the head of the file: had box uploaded, incusd would report a broken
		// tarball, not the clash.
		head := file("head.tar.gz")
		copyHead(t, file("src.tar.gz"), head, 1<<20)
		r.fails(t, 1, []string{`an instance named "src" already exists: nothing was imported`, "--name NEW"}, "import", head)
		r.fails(t, 1, []string{"is not a box export"}, "import", filepath.Join(r.home, ".config", "box", "templates", "blank", "box.env"))
	})

	t.Run("import brings the box back with its snapshots, on this host's stack, with a fresh identity", func(t *testing.T) {
		res := r.ok(t, "import", file("src.tar.gz"), "--name", "copy")
		if !strings.Contains(res.stderr, "imported copy") {
			t.Errorf("stderr: %s", res.stderr)
		}
		inst, _, err := c.Instance(r.ctx, "copy")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(inst.Profiles, []string{incuslab.Profile}) || !inst.Running() {
			t.Errorf("profiles %v, status %s", inst.Profiles, inst.Status)
		}
		for _, k := range []string{"user.box", "user.box.template", "user.box.user", "user.box.origin", "user.box.created"} {
			if inst.Config[k] != srcInst.Config[k] {
				t.Errorf("%s = %q, the export had %q", k, inst.Config[k], srcInst.Config[k])
			}
		}
		if inst.Config[vm.KeyImported] == "" || inst.Config[vm.KeyImportedLast] != inst.Config[vm.KeyImported] || inst.Config[vm.KeyImportedCount] != "1" {
			t.Errorf("import stamp: %v", inst.Config)
		}
		if mac := inst.Config["volatile.eth0.hwaddr"]; mac == "" || mac == srcInst.Config["volatile.eth0.hwaddr"] {
			t.Errorf("MAC %q, the source's %q", mac, srcInst.Config["volatile.eth0.hwaddr"])
		}
		if _, err := c.WaitIPv4(r.ctx, "copy", "eth0"); err != nil {
			t.Fatal(err)
		}
		if id := strings.TrimSpace(r.rootExec("copy", "cat", "/etc/machine-id")); id == "" || id == srcID {
			t.Errorf("machine-id %q, the source's %q", id, srcID)
		}
		if out := r.ok(t, "exec", "copy", "--", "cat", ".token-stand-in").stdout; out != "logged-in\n" {
			t.Errorf("the box's state did not come back: %q", out)
		}
		if info := r.info(t, "copy"); len(info.Snapshots) != 1 || info.Snapshots[0].Name != "authed" {
			t.Errorf("snapshots: %+v", info.Snapshots)
		}
		r.ok(t, "new", "--name", "fromcopy", "--from", "copy/authed")
	})

	t.Run("a second trip counts, and --instance-only leaves the snapshots behind", func(t *testing.T) {
		r.ok(t, "stop", "copy")
		first, _, err := c.Instance(r.ctx, "copy")
		if err != nil {
			t.Fatalf("instance copy: %v", err)
		}
		r.ok(t, "export", "copy", file("copy.tar.gz"))
		r.ok(t, "import", file("copy.tar.gz"), "--name", "again")
		again, _, err := c.Instance(r.ctx, "again")
		if err != nil {
			t.Fatalf("instance again: %v", err)
		}
		if again.Config[vm.KeyImportedCount] != "2" || again.Config[vm.KeyImported] != first.Config[vm.KeyImported] {
			t.Errorf("second trip stamp: %v (first %v)", again.Config, first.Config)
		}
		if info := r.info(t, "again"); info.ImportedCount != 2 || info.Imported != first.Config[vm.KeyImported] || info.ImportedLast == info.Imported {
			t.Errorf("info --json of a second trip: %+v", info)
		}
		r.ok(t, "import", file("src-only.tar.gz"), "--name", "bare")
		if info := r.info(t, "bare"); len(info.Snapshots) != 0 {
			t.Errorf("--instance-only export came back with snapshots: %+v", info.Snapshots)
		}
	})

	t.Run("an untagged instance is refused on export, and an export of one on import", func(t *testing.T) {
		r.raw("payroll", map[string]string{"user.owner": "finance"})
		r.fails(t, 1, []string{`instance "payroll" is not a box`}, "export", "payroll", file("payroll.tar.gz"))
		_ = c.Stop(r.ctx, "payroll", 0, true)
		rawExport(t, r, "payroll", file("payroll.tar.gz"))
		r.fails(t, 1, []string{`the export's instance "payroll" is not a box`, "incus import"}, "import", file("payroll.tar.gz"), "--name", "payroll2")
		if r.exists("payroll2") {
			t.Error("an untagged export was imported")
		}
	})

	t.Run("a box with a host path, or a snapshot with a security key, is refused on import", func(t *testing.T) {
		r.ok(t, "new", "--name", "hostpath", "--container")
		r.ok(t, "stop", "hostpath")
		inst, etag, _ := c.Instance(r.ctx, "hostpath")
		put := incus.InstancePut{Config: inst.Config, Devices: inst.Devices, Profiles: inst.Profiles, Architecture: inst.Architecture}
		put.Devices["host"] = map[string]string{"type": "disk", "source": "/", "path": "/host"}
		if err := c.Update(r.ctx, "hostpath", put, etag); err != nil {
			t.Fatal(err)
		}
		rawExport(t, r, "hostpath", file("hostpath.tar.gz"))
		r.fails(t, 1, []string{`device "host" (disk)`, "never gives a box"}, "import", file("hostpath.tar.gz"), "--name", "hostpath2")

		r.ok(t, "new", "--name", "priv", "--container")
		r.ok(t, "stop", "priv")
		if err := c.SetConfig(r.ctx, "priv", map[string]string{"security.privileged": "true"}); err != nil {
			t.Fatal(err)
		}
		r.ok(t, "snapshot", "priv", "privileged")
		if err := c.SetConfig(r.ctx, "priv", nil, "security.privileged"); err != nil {
			t.Fatal(err)
		}
		rawExport(t, r, "priv", file("priv.tar.gz"))
		r.fails(t, 1, []string{`snapshot privileged sets config key "security.privileged"`}, "import", file("priv.tar.gz"), "--name", "priv2")
		for _, n := range []string{"hostpath2", "priv2"} {
			if r.exists(n) {
				t.Errorf("%s was imported", n)
			}
		}
	})

	t.Run("an upload cut short leaves no half box", func(t *testing.T) {
		// Ctrl-C: box cleans up itself. SIGKILL: box cannot; incusd must create nothing.
		for name, sig := range map[string]syscall.Signal{"cutint": syscall.SIGINT, "cutkill": syscall.SIGKILL} {
			res := cutImport(t, r, file("src.tar.gz"), name, sig)
			if sig == syscall.SIGINT && (res.code == 0 || !strings.Contains(res.stderr, "interrupted")) {
				t.Errorf("Ctrl-C: exit %d: %s", res.code, res.stderr)
			}
		}
		// incusd spools the upload to a temporary file and creates nothing before the
		// whole body arrived: wait for it to notice the cut, then nothing may be left.
		backupsDir := filepath.Join(r.lab.IncusDir, "backups")
		deadline := time.Now().Add(2 * time.Minute)
		for {
			left, _ := filepath.Glob(filepath.Join(backupsDir, "*"))
			var spools []string
			for _, l := range left {
				if st, err := os.Stat(l); err == nil && !st.IsDir() {
					spools = append(spools, l)
				}
			}
			if len(spools) == 0 && !vm.Busy(r.ctx, c, "cutint") && !vm.Busy(r.ctx, c, "cutkill") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("incusd still holds the cut uploads: %v", spools)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, n := range []string{"cutint", "cutkill"} {
			if r.exists(n) {
				t.Errorf("%s: a half box was left", n)
			}
		}
		var vols []map[string]any
		if err := c.Query(r.ctx, "GET", "/storage-pools/"+incuslab.Pool+"/volumes?recursion=1", nil, &vols); err != nil {
			t.Fatal(err)
		}
		for _, v := range vols {
			if n, _ := v["name"].(string); strings.HasPrefix(n, "cut") {
				t.Errorf("storage volume %s left behind", n)
			}
		}
	})
}

// copyHead copies the first n bytes of src to dst.
func copyHead(t *testing.T, src, dst string, n int64) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.CopyN(out, in, n); err != nil {
		t.Fatal(err)
	}
}

// rawExport exports an instance through the API, as incus export would, bypassing box;
// uncompressed (quick, and box import reads a plain tar too).
func rawExport(t *testing.T, r *vmRig, name, file string) {
	t.Helper()
	if err := r.client.CreateBackup(r.ctx, name, incus.BackupsPost{Name: "raw", ExpiresAt: time.Now().Add(time.Hour), CompressionAlgorithm: "none"}); err != nil {
		t.Fatal(err)
	}
	defer r.client.DeleteBackup(context.Background(), name, "raw")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := r.client.ExportBackup(r.ctx, name, "raw", f); err != nil {
		t.Fatal(err)
	}
}

// cutImport runs box import NAME from a FIFO fed with the first half of file, then
// signals box while the upload is under way and closes the FIFO only once box has
// ended: an import that waits for more of a stalled source after Ctrl-C never ends.
// Each write to the FIFO returns once box has taken it into the pipe, so half the
// file has been sent on when the signal comes. Every wait is bounded: a box import
// that does not end is killed and named, never a hung test run.
func cutImport(t *testing.T, r *vmRig, file, name string, sig syscall.Signal) result {
	t.Helper()
	// Generous: the bounds only turn a hang into a failure, they time nothing.
	const bound = 3 * time.Minute
	fifo := filepath.Join(t.TempDir(), "export.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.box, "import", fifo, "--name", name)
	cmd.Env = r.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The feeder's open blocks until box opens the FIFO, its writes while box is not
	// reading. Once box has ended, unblock releases both: opening and closing the read
	// side lets an open still waiting for a reader proceed, and a write to a FIFO that
	// nobody reads fails.
	type feed struct {
		w   *os.File
		err error
	}
	fed := make(chan feed, 1)
	half := data[:len(data)/2]
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			fed <- feed{nil, err}
			return
		}
		for p := half; len(p) > 0; {
			n, err := w.Write(p[:min(len(p), 64<<10)])
			if err != nil {
				fed <- feed{w, err}
				return
			}
			p = p[n:]
		}
		fed <- feed{w, nil}
	}()
	unblock := func() {
		if rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			rd.Close()
		}
		if f := <-fed; f.w != nil {
			f.w.Close()
		}
	}
	var w *os.File
	select {
	case f := <-fed:
		if f.err != nil {
			if f.w != nil {
				f.w.Close()
			}
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("feeding the upload: %v (box: %s)", f.err, e.String())
		}
		w = f.w
	case err := <-exited:
		unblock()
		t.Fatalf("box import ended before half the upload was sent: %v: %s", err, e.String())
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-exited
		unblock()
		t.Fatalf("box import took in less than half the upload (%d bytes) within %s: killed it: %s", len(half), bound, e.String())
	}
	defer w.Close()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("box import did not end within %s of %s while its source stalled (Ctrl-C must always end it): killed it: %s", bound, sig, e.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	t.Logf("box import cut by %s after %d of %d bytes: exit %d: %s", sig, len(half), len(data), code, strings.TrimSpace(e.String()))
	return result{code, o.String(), e.String()}
}
