package incus_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
)

const userData = "#cloud-config\n# passed verbatim: not parsed by box\nusers:\n  - name: dev\n"

// timed runs f and logs how long it took, for the report.
func timed(t *testing.T, what string, f func() error) {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("timing: %-28s %s", what, time.Since(start).Round(time.Millisecond))
}

type execResult struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, c *incus.Client, name string, stdin string, cmd ...string) execResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	e := incus.Exec{Command: cmd, Stdout: &out, Stderr: &errb}
	if stdin != "" {
		e.Stdin = strings.NewReader(stdin)
	}
	code, err := c.Exec(ctx, name, e)
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return execResult{code, out.String(), errb.String()}
}

// TestLive drives the client against a real incusd: the lifecycle box relies on, in
// order, on one lab.
func TestLive(t *testing.T) {
	lab := incuslab.Start(t)
	c := lab.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("env resolves the lab socket", func(t *testing.T) {
		t.Setenv("INCUS_SOCKET", "")
		t.Setenv("INCUS_DIR", lab.IncusDir)
		s, err := incus.NewFromEnv().Server(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("incusd %s, driver %s, storage %s", s.Environment.ServerVersion, s.Environment.Driver, s.Environment.Storage)
	})

	aliases, err := c.ImageAliases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(aliases) != 1 || aliases[0].Name != incuslab.ImageAlias || aliases[0].Target != lab.Fingerprint {
		t.Fatalf("image aliases = %+v, want %s -> %s", aliases, incuslab.ImageAlias, lab.Fingerprint)
	}

	t.Run("re-import moves aliases", func(t *testing.T) {
		img, err := incuslab.EnsureImage(ctx, incuslab.BookwormRecipe(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var fp string
		timed(t, "re-import same image", func() (err error) {
			fp, err = c.ImportImage(ctx, img.Metadata, img.Rootfs, incuslab.ImageAlias, "box-test/again")
			return err
		})
		if fp != lab.Fingerprint {
			t.Errorf("re-import fingerprint %s, want %s", fp, lab.Fingerprint)
		}
		if a, err := c.ImageAlias(ctx, "box-test/again"); err != nil || a.Target != fp {
			t.Errorf("alias after re-import: %+v %v", a, err)
		}
	})

	pool, err := c.RootPool(ctx, incuslab.Profile)
	if err != nil || pool != incuslab.Pool {
		t.Fatalf("root pool of %s = %q, %v", incuslab.Profile, pool, err)
	}
	if _, err := c.RootPool(ctx, "nosuch"); !incus.IsNotFound(err) {
		t.Errorf("root pool of a missing profile: %v", err)
	}
	mint, err := incus.MintRequest(incus.Mint{
		Name: "alpha", Profile: incuslab.Profile, Image: incuslab.ImageAlias,
		CPU: "1", Memory: "512MiB", Disk: "2GiB", Pool: pool,
		UserData: userData, Template: "blank", User: "dev", Created: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	timed(t, "create container", func() error { return c.Create(ctx, mint) })
	timed(t, "start", func() error { return c.Start(ctx, "alpha") })
	var ip string
	timed(t, "IPv4 lease after start", func() (err error) {
		lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		ip, err = c.WaitIPv4(lctx, "alpha", "eth0")
		return err
	})
	if !strings.HasPrefix(ip, "10.211.7.") {
		t.Errorf("alpha IPv4 = %q, want one in the lab subnet", ip)
	}

	alpha, _, err := c.Instance(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("mint stamp", func(t *testing.T) {
		if !alpha.Running() || alpha.Type != incus.TypeContainer {
			t.Errorf("alpha: status %s type %s", alpha.Status, alpha.Type)
		}
		if !incus.IsBox(*alpha) || incus.UserOf(*alpha) != "dev" {
			t.Errorf("alpha: IsBox %v UserOf %q", incus.IsBox(*alpha), incus.UserOf(*alpha))
		}
		for k, want := range map[string]string{
			incus.KeyTemplate: "blank", incus.KeySchema: incus.Schema, incus.KeyOrigin: "mint",
			incus.KeyUserData: userData, incus.KeyCPU: "1", incus.KeyMemory: "512MiB",
		} {
			if got := alpha.Config[k]; got != want {
				t.Errorf("alpha %s = %q, want %q", k, got, want)
			}
		}
		if got := alpha.Profiles; len(got) != 1 || got[0] != incuslab.Profile {
			t.Errorf("alpha profiles = %v", got)
		}
		if got := alpha.Devices["root"]["size"]; got != "2GiB" {
			t.Errorf("alpha root size = %q", got)
		}
		if _, err := time.Parse(time.RFC3339, alpha.Config[incus.KeyCreated]); err != nil {
			t.Errorf("alpha created stamp: %v", err)
		}
	})

	t.Run("exec exit codes and streams", func(t *testing.T) {
		for _, tc := range []struct {
			cmd  []string
			code int
		}{
			{[]string{"true"}, 0},
			{[]string{"false"}, 1},
			{[]string{"sh", "-c", "exit 7"}, 7},
		} {
			start := time.Now()
			if r := run(t, c, "alpha", "", tc.cmd...); r.code != tc.code {
				t.Errorf("%v: exit %d, want %d", tc.cmd, r.code, tc.code)
			}
			t.Logf("timing: exec %-23s %s", strings.Join(tc.cmd, " "), time.Since(start).Round(time.Millisecond))
		}
		r := run(t, c, "alpha", "", "sh", "-c", "echo out; echo err >&2; exit 3")
		if r.code != 3 || r.stdout != "out\n" || r.stderr != "err\n" {
			t.Errorf("streams: %+v", r)
		}
		if r := run(t, c, "alpha", "hello\nbox\n", "cat"); r.stdout != "hello\nbox\n" || r.code != 0 {
			t.Errorf("stdin: %+v", r)
		}
		// Output is complete only once the data websockets have closed.
		r = run(t, c, "alpha", "", "sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; exit 5")
		if r.code != 5 || len(r.stdout) != 3000001 {
			t.Errorf("large output: exit %d, %d bytes", r.code, len(r.stdout))
		}
	})

	t.Run("exec as user, in cwd, with env", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		code, err := c.Exec(ctx, "alpha", incus.Exec{
			Command: []string{"sh", "-c", "echo $(id -u):$(id -g):$(pwd):$GREETING"},
			User:    65534, Group: 65534, Cwd: "/tmp", Env: map[string]string{"GREETING": "hi"},
			Stdout: &out,
		})
		if err != nil || code != 0 || out.String() != "65534:65534:/tmp:hi\n" {
			t.Errorf("exec as nobody: code %d err %v out %q", code, err, out.String())
		}
	})

	t.Run("exec with a terminal and resize", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		stdinR, stdinW := io.Pipe()
		resize := make(chan incus.WindowSize, 1)
		var out syncBuffer
		done := make(chan struct{})
		var code int
		var err error
		go func() {
			defer close(done)
			code, err = c.Exec(ctx, "alpha", incus.Exec{
				Command:  []string{"sh", "-c", "stty size; tty; read x; stty size; exit 4"},
				Terminal: true, Size: incus.WindowSize{Width: 100, Height: 30},
				Stdin: stdinR, Stdout: &out, Resize: resize,
			})
		}()
		waitFor(t, &out, "/dev/pts/")
		resize <- incus.WindowSize{Width: 120, Height: 40}
		time.Sleep(300 * time.Millisecond) // the resize travels on another websocket
		io.WriteString(stdinW, "\n")
		<-done
		stdinW.Close()
		got := strings.ReplaceAll(out.String(), "\r", "")
		if err != nil || code != 4 || !strings.Contains(got, "30 100\n") || !strings.Contains(got, "40 120\n") {
			t.Errorf("terminal exec: code %d err %v output %q", code, err, got)
		}
	})

	t.Run("exec ends with its context", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Exec(cctx, "alpha", incus.Exec{Command: []string{"sleep", "60"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("exec took %s after its deadline", d)
		}
		if r := run(t, c, "alpha", "", "sh", "-c", "pgrep -x sleep || true"); strings.TrimSpace(r.stdout) != "" {
			t.Errorf("sleep still running after cancel: pid %s", r.stdout)
		}
	})

	t.Run("exec forwards signals", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		sig := make(chan syscall.Signal, 1)
		var out syncBuffer
		done := make(chan struct{})
		var code int
		var err error
		go func() {
			defer close(done)
			code, err = c.Exec(ctx, "alpha", incus.Exec{
				Command: []string{"sh", "-c", "trap 'exit 9' TERM; echo ready; sleep 30 & wait"},
				Stdout:  &out, Signal: sig,
			})
		}()
		waitFor(t, &out, "ready")
		sig <- syscall.SIGTERM
		<-done
		if err != nil || code != 9 {
			t.Errorf("after SIGTERM: code %d err %v", code, err)
		}
	})

	t.Run("exec of a missing command", func(t *testing.T) {
		code, err := c.Exec(ctx, "alpha", incus.Exec{Command: []string{"/nonexistent/cmd"}})
		var apiErr *incus.Error
		if code != 127 || !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "/nonexistent/cmd") {
			t.Errorf("missing command: code %d err %v, want 127 and Incus's error", code, err)
		}
	})

	t.Run("a mutating call ends with its context", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := c.CreateSnapshot(cctx, "alpha", incus.SnapshotPost{Name: "interrupted"})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Errorf("snapshot under a 50ms deadline: %v after %s", err, time.Since(start))
		}
		// The snapshot may still complete in incusd (a snapshot cannot be cancelled), and
		// its operation may appear only after the client gave up on the request: wait
		// until neither a running operation nor the snapshot is seen three times in a row,
		// removing the snapshot whenever it shows up.
		deadline := time.Now().Add(30 * time.Second)
		for quiet := 0; quiet < 3; {
			var ops map[string][]incus.Operation
			if err := c.Query(ctx, "GET", "/operations?recursion=1", nil, &ops); err != nil {
				t.Fatal(err)
			}
			err := c.DeleteSnapshot(ctx, "alpha", "interrupted")
			if err != nil && !incus.IsNotFound(err) && !strings.Contains(err.Error(), "busy") {
				t.Fatal(err)
			}
			if len(ops["running"]) == 0 && incus.IsNotFound(err) {
				quiet++
			} else {
				quiet = 0
			}
			if time.Now().After(deadline) {
				t.Fatalf("operations still running: %+v", ops["running"])
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("exec in a missing instance names it", func(t *testing.T) {
		_, err := c.Exec(ctx, "nosuch", incus.Exec{Command: []string{"true"}})
		if !incus.IsNotFound(err) || !strings.Contains(err.Error(), `"nosuch"`) {
			t.Errorf("err = %v", err)
		}
	})

	// Snapshot, then change the box, then clone the snapshot and restore it.
	run(t, c, "alpha", "", "sh", "-c", "echo before > /root/marker")
	snap, _ := incus.SnapshotRequest("authed")
	timed(t, "snapshot", func() error { return c.CreateSnapshot(ctx, "alpha", snap) })
	run(t, c, "alpha", "", "sh", "-c", "echo after > /root/marker")
	snaps, err := c.Snapshots(ctx, "alpha")
	if err != nil || len(snaps) != 1 || snaps[0].Name != "authed" || snaps[0].Config[incus.KeyUser] != "dev" {
		t.Fatalf("snapshots = %+v, %v", snaps, err)
	}

	t.Run("clone from snapshot keeps the stamp", func(t *testing.T) {
		clone, err := incus.CloneRequest(incus.Clone{Name: "beta", From: "alpha", Snapshot: "authed",
			Profile: incuslab.Profile, Created: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		timed(t, "clone from snapshot", func() error { return c.Create(ctx, clone) })
		beta, _, err := c.Instance(ctx, "beta")
		if err != nil {
			t.Fatal(err)
		}
		if !incus.IsBox(*beta) || incus.UserOf(*beta) != "dev" || beta.Config[incus.KeyTemplate] != "blank" ||
			beta.Config[incus.KeyUserData] != userData || beta.Config[incus.KeySchema] != incus.Schema {
			t.Errorf("beta lost the stamp: %v", beta.Config)
		}
		if beta.Config[incus.KeyOrigin] != "clone" || beta.Config[incus.KeyOriginFrom] != "alpha/authed" {
			t.Errorf("beta provenance: origin %q from %q", beta.Config[incus.KeyOrigin], beta.Config[incus.KeyOriginFrom])
		}
		if beta.Config[incus.KeyCreated] == alpha.Config[incus.KeyCreated] {
			t.Error("beta kept alpha's creation stamp")
		}
		if hw := beta.Config["volatile.eth0.hwaddr"]; hw == "" || hw == alpha.Config["volatile.eth0.hwaddr"] {
			t.Errorf("beta MAC %q (alpha %q): want a fresh one", hw, alpha.Config["volatile.eth0.hwaddr"])
		}
		if s, _ := c.Snapshots(ctx, "beta"); len(s) != 0 {
			t.Errorf("beta has snapshots %v: a clone starts its own history", s)
		}
		timed(t, "start clone", func() error { return c.Start(ctx, "beta") })
		if r := run(t, c, "beta", "", "cat", "/root/marker"); r.stdout != "before\n" {
			t.Errorf("beta marker = %q, want the snapshot's", r.stdout)
		}
		if r := run(t, c, "beta", "", "hostname"); r.stdout != "beta\n" {
			t.Errorf("beta hostname = %q", r.stdout)
		}
		timed(t, "stop clone (force)", func() error { return c.Stop(ctx, "beta", 0, true) })
		timed(t, "delete clone", func() error { return c.Delete(ctx, "beta") })
	})

	t.Run("restore", func(t *testing.T) {
		req, _ := incus.RestoreRequest("authed")
		timed(t, "restore (running)", func() error { return c.Restore(ctx, "alpha", req) })
		if r := run(t, c, "alpha", "", "cat", "/root/marker"); r.stdout != "before\n" {
			t.Errorf("marker after restore = %q", r.stdout)
		}
		if err := c.Restore(ctx, "alpha", incus.RestorePut{Restore: "nosuch"}); err == nil ||
			!strings.Contains(err.Error(), `"alpha"`) || !strings.Contains(err.Error(), `"nosuch"`) {
			t.Errorf("restore of a missing snapshot: %v", err)
		}
	})

	t.Run("rename", func(t *testing.T) {
		err := c.Rename(ctx, "alpha", "alpha2")
		var apiErr *incus.Error
		if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), `"alpha"`) {
			t.Fatalf("rename of a running instance: err = %v, want Incus's refusal naming alpha", err)
		}
		t.Logf("Incus refuses a running rename: %v (status %d)", err, apiErr.Status)
		// A bound, not a measure: the lab container's systemd shuts down in seconds, but
		// CI met a 30 s bound on a loaded host (the clean stop is what is under test).
		timed(t, "stop (clean)", func() error { return c.Stop(ctx, "alpha", 2*time.Minute, false) })
		timed(t, "rename (stopped)", func() error { return c.Rename(ctx, "alpha", "alpha2") })
		if _, _, err := c.Instance(ctx, "alpha"); !incus.IsNotFound(err) {
			t.Errorf("old name after rename: %v", err)
		}
		if s, _ := c.Snapshots(ctx, "alpha2"); len(s) != 1 {
			t.Errorf("snapshots after rename: %v", s)
		}
	})

	t.Run("untagged instance is not a box", func(t *testing.T) {
		payroll := incus.InstancesPost{Name: "payroll", Type: incus.TypeContainer,
			Source: incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias}, Profiles: []string{incuslab.Profile}}
		timed(t, "create untagged", func() error { return c.Create(ctx, payroll) })
		inst, _, err := c.Instance(ctx, "payroll")
		if err != nil {
			t.Fatal(err)
		}
		if incus.IsBox(*inst) || incus.UserOf(*inst) != "root" {
			t.Errorf("payroll: IsBox %v UserOf %q", incus.IsBox(*inst), incus.UserOf(*inst))
		}
		boxes, err := c.ListBoxes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := c.ListInstances(ctx)
		if len(boxes) != 1 || boxes[0].Name != "alpha2" || len(all) != 2 {
			t.Errorf("ListBoxes = %v of %d instances", names(boxes), len(all))
		}
	})

	t.Run("config: unset vs empty, ETag", func(t *testing.T) {
		if err := c.SetConfig(ctx, "payroll", map[string]string{"user.note": "x", incus.KeyLegacy: "1"}); err != nil {
			t.Fatal(err)
		}
		inst, etag, _ := c.Instance(ctx, "payroll")
		if !incus.IsBox(*inst) || incus.UserOf(*inst) != "claude" {
			t.Errorf("legacy-tagged: IsBox %v UserOf %q", incus.IsBox(*inst), incus.UserOf(*inst))
		}
		if _, ok := inst.Config[incus.KeyUser]; ok {
			t.Error("unset key present in the API answer")
		}
		// An empty value: does Incus keep the key? UserOf treats it as unset either way.
		if err := c.SetConfig(ctx, "payroll", map[string]string{incus.KeyUser: ""}); err != nil {
			t.Fatal(err)
		}
		inst2, _, _ := c.Instance(ctx, "payroll")
		v, ok := inst2.Config[incus.KeyUser]
		t.Logf("empty user.box.user: present=%v value=%q; UserOf=%q", ok, v, incus.UserOf(*inst2))
		if incus.UserOf(*inst2) != "claude" {
			t.Errorf("UserOf with empty user.box.user = %q", incus.UserOf(*inst2))
		}
		// Incus keeps no empty values, so the config is unchanged; change it for real to
		// make the first ETag stale: a conditional write must then be refused.
		if err := c.SetConfig(ctx, "payroll", map[string]string{"user.note": "y"}); err != nil {
			t.Fatal(err)
		}
		put := incus.InstancePut{Config: inst.Config, Devices: inst.Devices, Profiles: inst.Profiles}
		if err := c.Update(ctx, "payroll", put, etag); err == nil {
			t.Error("update with a stale ETag accepted")
		} else {
			t.Logf("stale ETag: %v", err)
		}
		if err := c.SetConfig(ctx, "payroll", nil, "user.note", incus.KeyLegacy, incus.KeyUser); err != nil {
			t.Fatal(err)
		}
		inst3, _, _ := c.Instance(ctx, "payroll")
		if _, ok := inst3.Config["user.note"]; ok || incus.IsBox(*inst3) {
			t.Errorf("unset keys still there: %v", inst3.Config)
		}
	})

	t.Run("delete", func(t *testing.T) {
		timed(t, "delete stopped", func() error { return c.Delete(ctx, "alpha2") })
		timed(t, "delete untagged", func() error { return c.Delete(ctx, "payroll") })
		if _, _, err := c.Instance(ctx, "alpha2"); !incus.IsNotFound(err) {
			t.Errorf("after delete: %v", err)
		}
		if err := c.Delete(ctx, "alpha2"); !incus.IsNotFound(err) || !strings.Contains(err.Error(), `"alpha2"`) {
			t.Errorf("delete of a missing instance: %v", err)
		}
	})
}

func names(is []incus.Instance) []string {
	var out []string
	for _, i := range is {
		out = append(out, i.Name)
	}
	return out
}
