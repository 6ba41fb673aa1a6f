package vm_test

// The vm verbs for real: the built box binary against a real incusd (drill/incuslab, in
// its own network namespace), with containers (VMs cannot run here). One lab and a few
// containers are shared by the subtests, in order.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
)

func TestVMLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	r := newVMRig(t)
	c := r.client
	lab := r.lab

	t.Run("new mints with the placement profile, the template and the stamp", func(t *testing.T) {
		res := r.ok(t, "new", "--name", "a", "--container", "--cpu", "2")
		if res.stdout != "" || !strings.Contains(res.stderr, "box: a is ready (container, 10.211.7.") {
			t.Errorf("new: stdout %q, stderr %q", res.stdout, res.stderr)
		}
		inst, _, err := c.Instance(r.ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"user.box": "1", "user.box.template": "blank", "user.box.user": "dev", "user.box.origin": "mint",
			"user.box.schema": "1", "limits.cpu": "2", "limits.memory": "512MiB", "cloud-init.user-data": labUserData,
			// A container shares the host kernel: its processes are bounded by default.
			"limits.processes": "4096",
		}
		for k, v := range want {
			if inst.Config[k] != v {
				t.Errorf("config %s = %q, want %q", k, inst.Config[k], v)
			}
		}
		if !reflect.DeepEqual(inst.Profiles, []string{incuslab.Profile}) {
			t.Errorf("profiles %v, want the placement profile only", inst.Profiles)
		}
		if d := inst.Devices["root"]; d["size"] != "2GiB" || d["pool"] != incuslab.Pool || len(inst.Devices) != 1 {
			t.Errorf("devices %v: want only the root disk, sized by the template", inst.Devices)
		}
		info := r.info(t, "a")
		if info.State != "Running" || info.Type != "container" || !strings.HasPrefix(info.IPv4, "10.211.7.") ||
			info.Template != "blank" || info.User != "dev" || info.Origin != "mint" || info.Legacy || info.CPU != "2" {
			t.Errorf("info a: %+v", info)
		}
	})

	t.Run("box new --backend vm honours a vm profile's keys and refuses the rest by name", func(t *testing.T) {
		// Honoured: the profile's template and memory (over the template's 512MiB).
		r.ok(t, "new", "--backend", "vm", "--profile", "small", "--name", "pv", "--container")
		inst, _, err := c.Instance(r.ctx, "pv")
		if err != nil {
			t.Fatal(err)
		}
		if inst.Config["limits.memory"] != "768MiB" || inst.Config["user.box.template"] != "blank" {
			t.Errorf("pv config: memory %q, template %q: want the profile's 768MiB and blank", inst.Config["limits.memory"], inst.Config["user.box.template"])
		}
		r.ok(t, "rm", "--force", "pv")
		// Refused, naming the key, the file and the backend, before anything is made: a
		// vm box cannot have no network, mounts of the host, or the host's env.
		prof := filepath.Join(r.home, ".config", "box", "profiles")
		for key, body := range map[string]string{
			"network": "network = \"none\"\n",
			"mounts":  "[[mounts]]\npath = \"/srv\"\n",
			"env":     "env = [\"GITHUB_TOKEN\"]\n",
		} {
			r.writeFile(filepath.Join(prof, "vm"+key+".toml"), "backend = \"vm\"\ntemplate = \"blank\"\n"+body)
			r.fails(t, 1, []string{"vm" + key + ".toml) sets " + key + ", which the vm backend does not honour"},
				"new", "--backend", "vm", "--profile", "vm"+key, "--name", "pr"+key, "--container")
			if r.exists("pr" + key) {
				t.Errorf("a box was made from a vm profile setting %s", key)
			}
		}
	})

	t.Run("a bwrap profile is refused", func(t *testing.T) {
		r.fails(t, 2, []string{`profile "default" is for the bwrap backend, not vm`}, "new", "--name", "p", "--profile", "default", "--backend", "vm", "--container")
	})

	t.Run("names and flags are checked before any call", func(t *testing.T) {
		r.fails(t, 2, []string{`invalid box name "1bad"`}, "new", "--name", "1bad", "--container")
		r.fails(t, 2, []string{"box new needs --name"}, "new", "--container")
		r.fails(t, 125, []string{"invalid box name"}, "exec", "bad_name", "--", "true") // box's own failure on a verb that runs a command
		r.fails(t, 2, []string{"--from cannot be combined with --cpu, --template"}, "new", "--name", "x", "--from", "a", "--template", "blank", "--cpu", "2")
		r.fails(t, 2, []string{"--from cannot be combined with --memory"}, "new", "--name", "x", "--from", "a/snap1", "--memory", "1GiB")
		r.fails(t, 2, []string{"--vm and --container exclude each other"}, "new", "--name", "x", "--vm", "--container")
		r.fails(t, 2, []string{"--cpu"}, "new", "--name", "x", "--container", "--cpu", "lots")
		r.fails(t, 1, []string{`no box named "nope"`, "box list"}, "info", "nope")
	})

	t.Run("an unknown template key is rejected", func(t *testing.T) {
		r.fails(t, 1, []string{"BOX_NETWORK", "network"}, "new", "--name", "leak", "--template", "leaky", "--container")
		if r.exists("leak") {
			t.Error("a box was made from a template with a network key")
		}
	})

	t.Run("a launch that runs out of time leaves nothing behind", func(t *testing.T) {
		r.fails(t, 1, []string{"within 300ms"}, "new", "--name", "late", "--container", "--timeout", "300ms")
		if r.exists("late") {
			t.Error("the timed-out box was left behind")
		}
	})

	t.Run("exec enters as the stamped user and passes the exit code", func(t *testing.T) {
		// The lab image has no cloud-init: the template's user is not there yet.
		r.fails(t, 125, []string{`there is no user "dev" in this box`}, "exec", "a", "--", "true")
		r.rootExec("a", "useradd", "--create-home", "--shell", "/bin/bash", "dev")
		res := r.ok(t, "exec", "a", "--", "sh", "-c", `id -un; pwd; echo "$HOME"`)
		if res.stdout != "dev\n/home/dev\n/home/dev\n" {
			t.Errorf("exec a: %q", res.stdout)
		}
		if res := r.run(t, "", "exec", "a", "--", "sh", "-c", "exit 7"); res.code != 7 {
			t.Errorf("exit 7: got %d (%s)", res.code, res.stderr)
		}
		if res := r.run(t, "", "exec", "a", "--", "sh", "-c", "echo out; echo err >&2; exit 3"); res.code != 3 || res.stdout != "out\n" || res.stderr != "err\n" {
			t.Errorf("streams: %+v", res)
		}
		if res := r.run(t, "piped in\n", "exec", "a", "--", "cat"); res.code != 0 || res.stdout != "piped in\n" {
			t.Errorf("stdin: %+v", res)
		}
		if res := r.run(t, "", "exec", "a", "--", "printf", "[%s]", "two words", "$HOME", "*"); res.stdout != "[two words][$HOME][*]" {
			t.Errorf("argv reached the command changed: %q", res.stdout)
		}
		// A blank box has no claude user (getent exits 2: not found).
		if res := r.run(t, "", "exec", "a", "--", "getent", "passwd", "claude"); res.code != 2 {
			t.Errorf("getent passwd claude in a blank box: exit %d, %q", res.code, res.stdout)
		}
	})

	t.Run("snapshot", func(t *testing.T) {
		r.ok(t, "exec", "a", "--", "sh", "-c", "echo before > ~/state")
		r.ok(t, "snapshot", "a", "snap1")
		res := r.ok(t, "snapshot", "a")
		r.fails(t, 1, []string{`already has a snapshot "snap1"`}, "snapshot", "a", "snap1")
		info := r.info(t, "a")
		if len(info.Snapshots) != 2 || info.Snapshots[0].Name != "snap1" || !strings.HasPrefix(info.Snapshots[1].Name, "manual-") {
			t.Errorf("snapshots: %+v (%s)", info.Snapshots, res.stderr)
		}
	})

	t.Run("restore asks, refuses without a terminal, and rolls back with --force", func(t *testing.T) {
		r.ok(t, "exec", "a", "--", "sh", "-c", "echo after > ~/state")
		r.fails(t, 2, []string{"not restored: no terminal to ask on", "--force"}, "restore", "a", "snap1")
		r.fails(t, 1, []string{`box "a" has no snapshot "nope"`, "snap1"}, "restore", "a", "nope", "--force")
		r.ok(t, "restore", "a", "snap1", "--force")
		if res := r.ok(t, "exec", "a", "--", "cat", "state"); res.stdout != "before\n" {
			t.Errorf("after restore: %q", res.stdout)
		}
	})

	t.Run("a clone lands in the right user without reading any template", func(t *testing.T) {
		r.ok(t, "new", "--name", "c", "--from", "a/snap1")
		if err := os.RemoveAll(r.tmpls); err != nil {
			t.Fatal(err)
		}
		res := r.ok(t, "exec", "c", "--", "sh", "-c", "id -un; cat ~/state")
		if res.stdout != "dev\nbefore\n" {
			t.Errorf("exec c: %q", res.stdout)
		}
		info := r.info(t, "c")
		if info.Origin != "clone" || info.OriginFrom != "a/snap1" || info.Template != "blank" || info.User != "dev" || len(info.Snapshots) != 0 {
			t.Errorf("info c: %+v", info)
		}
		out := shellOnPty(t, r, "c", "id -un; stty size\n", 40, 100, "44 120")
		if !strings.Contains(out, "dev") || !strings.Contains(out, "40 100") || !strings.Contains(out, "44 120") {
			t.Errorf("shell c: %q", out)
		}
	})

	t.Run("clones get their own machine ID and DHCP lease", func(t *testing.T) {
		// a → m1 → m2, each clone of a running box. systemd-networkd's DHCP client ID
		// derives from /etc/machine-id: shared, dnsmasq would hand out one lease twice.
		r.ok(t, "new", "--name", "m1", "--from", "a")
		r.ok(t, "new", "--name", "m2", "--from", "m1")
		ids, ips := map[string]string{}, map[string]string{}
		for _, n := range []string{"a", "m1", "m2"} {
			id := strings.TrimSpace(r.rootExec(n, "cat", "/etc/machine-id"))
			if len(id) != 32 {
				t.Errorf("%s: machine-id %q", n, id)
			}
			if other, dup := ids[id]; dup {
				t.Errorf("%s and %s share machine-id %s", other, n, id)
			}
			ids[id] = n
			ip := r.info(t, n).IPv4
			if ip == "" {
				t.Errorf("%s: no IPv4", n)
			}
			if other, dup := ips[ip]; dup {
				t.Errorf("%s and %s share the lease %s", other, n, ip)
			}
			ips[ip] = n
		}
		t.Logf("machine IDs %v, leases %v", ids, ips)
		r.ok(t, "rm", "m1", "--force")
		r.ok(t, "rm", "m2", "--force")
	})

	t.Run("a legacy claudebox instance is entered as claude", func(t *testing.T) {
		r.raw("legacy", map[string]string{incus.KeyLegacy: "1"})
		if _, err := c.WaitIPv4(r.ctx, "legacy", "eth0"); err != nil {
			t.Fatal(err)
		}
		r.rootExec("legacy", "useradd", "--create-home", "--shell", "/bin/bash", "claude")
		if res := r.ok(t, "exec", "legacy", "--", "id", "-un"); res.stdout != "claude\n" {
			t.Errorf("exec legacy: %q", res.stdout)
		}
		info := r.info(t, "legacy")
		if !info.Legacy || info.User != "claude" {
			t.Errorf("info legacy: %+v", info)
		}
	})

	t.Run("an untagged instance is refused by every verb and left as it was", func(t *testing.T) {
		r.raw("payroll", map[string]string{"user.owner": "finance"})
		if _, err := c.WaitIPv4(r.ctx, "payroll", "eth0"); err != nil {
			t.Fatal(err)
		}
		before := r.freeze("payroll")
		notBox := []string{`instance "payroll" is not a box: box never touches an instance it did not mint`, "use incus directly"}
		for _, args := range [][]string{
			{"shell", "payroll"},
			{"exec", "payroll", "--", "true"},
			{"info", "payroll"},
			{"info", "payroll", "--json"},
			{"snapshot", "payroll"},
			{"snapshot", "payroll", "x"},
			{"restore", "payroll", "x", "--force"},
			{"rename", "payroll", "other"},
			{"start", "payroll"},
			{"stop", "payroll", "--force"},
			{"rm", "payroll", "--force"},
			{"incus", "payroll", "--", "delete", "--force", "{}"},
			{"new", "--name", "stolen", "--from", "payroll"},
		} {
			if args[0] == "shell" {
				// shell needs a terminal before anything else: give it one.
				out := shellOnPty(t, r, "payroll", "", 24, 80, "")
				for _, m := range notBox {
					if !strings.Contains(out, m) {
						t.Errorf("box shell payroll: %q lacks %q", out, m)
					}
				}
				continue
			}
			want := 1
			if args[0] == "exec" {
				want = 125 // box's own failure on a verb that runs a command
			}
			r.fails(t, want, notBox, args...)
		}
		if r.exists("stolen") {
			t.Error("new --from payroll made a box")
		}
		if after := r.freeze("payroll"); !reflect.DeepEqual(before, after) {
			t.Errorf("payroll changed:\nbefore %+v\nafter  %+v", before, after)
		}
		res := r.ok(t, "list", "--json")
		decodeJSON(t, res.stdout, "box list --json")
		var list []boxJSON
		json.Unmarshal([]byte(res.stdout), &list)
		var names []string
		for _, b := range list {
			names = append(names, b.Name)
		}
		if !reflect.DeepEqual(names, []string{"a", "c", "legacy"}) {
			t.Errorf("box list: %v, want a c legacy (not payroll)", names)
		}
		table := r.ok(t, "list").stdout
		if !strings.HasPrefix(table, "NAME") || !strings.Contains(table, "IPV4") || strings.Contains(table, "payroll") {
			t.Errorf("box list table:\n%s", table)
		}
	})

	t.Run("the drill's verbs row passes, and turns BREACH when the tag check is bypassed", func(t *testing.T) {
		run := drill.BinaryRunner(r.box, r.env)
		o := drill.UntaggedOptions{Client: c, Image: incuslab.ImageAlias, Profile: incuslab.Profile, Run: run, Logf: t.Logf}
		start := time.Now()
		row := drill.UntaggedVerbs(r.ctx, o)
		t.Logf("untagged: %s (%s) in %s", row.Status, row.Observed, time.Since(start).Round(time.Millisecond))
		if row.Status != drill.Pass {
			t.Errorf("untagged instance: %s (%s), want PASS", row.Status, row.Observed)
		}
		// The same instance, tagged user.box=1: the tag check lets every verb in, and
		// the row must say so (each verb's line, and what they did to it).
		o.Config = map[string]string{incus.KeyBox: "1"}
		start = time.Now()
		row = drill.UntaggedVerbs(r.ctx, o)
		t.Logf("tagged: %s (%s) in %s", row.Status, row.Observed, time.Since(start).Round(time.Millisecond))
		if row.Status != drill.Breach {
			t.Errorf("tag check bypassed: %s (%s), want BREACH", row.Status, row.Observed)
		}
		for _, v := range []string{"info: accepted", "exec: accepted", "shell: accepted", "snapshot: accepted", "restore: accepted",
			"new: accepted", "stop: accepted", "rm: accepted", "a clone of it was made", "gone"} {
			if !strings.Contains(row.Observed, v) {
				t.Errorf("bypassed row lacks %q: %s", v, row.Observed)
			}
		}
		// Nothing of either run is left behind.
		list, err := c.ListInstances(r.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range list {
			if strings.HasPrefix(i.Name, "payroll-drill-") {
				t.Errorf("left behind: %s", i.Name)
			}
		}
	})

	t.Run("the escape hatch is tag-checked, echoes, warns", func(t *testing.T) {
		res := r.ok(t, "incus", "a", "--", "config", "get", "{}", "user.box.template")
		if res.stdout != "blank\n" || !strings.Contains(res.stderr, "box: running: incus config get a user.box.template") {
			t.Errorf("incus config get: %+v", res)
		}
		if strings.Contains(res.stderr, "warning") {
			t.Errorf("a harmless command warned: %s", res.stderr)
		}
		res = r.ok(t, "incus", "a", "--", "config", "get", "{}", "security.nesting")
		if !strings.Contains(res.stderr, "box: warning: security.nesting can move box a off the isolation stack") {
			t.Errorf("no warning for security.*: %s", res.stderr)
		}
		res = r.run(t, "", "incus", "a", "--", "config", "device", "show", "{}")
		if !strings.Contains(res.stderr, "box: warning: device") {
			t.Errorf("no warning for device: %s", res.stderr)
		}
		// Without {}, the instance is appended (upstream's rule).
		if res := r.ok(t, "incus", "a", "--", "info"); !strings.Contains(res.stdout, "Name: a\n") ||
			!strings.Contains(res.stderr, "box: running: incus info a ") {
			t.Errorf("incus a -- info: %+v", res)
		}
		if res := r.run(t, "", "incus", "a", "--", "exec", "{}", "--", "sh", "-c", "exit 4"); res.code != 4 {
			t.Errorf("incus exit code: %d", res.code)
		}
	})

	t.Run("rename refuses a running box, stop and start", func(t *testing.T) {
		r.fails(t, 1, []string{`box "a" is running: stop it first`, "box stop a"}, "rename", "a", "b")
		r.ok(t, "stop", "c")
		if info := r.info(t, "c"); info.State != "Stopped" || info.IPv4 != "" {
			t.Errorf("after stop: %+v", info)
		}
		r.fails(t, 125, []string{`box "c" is stopped`, "box start c"}, "exec", "c", "--", "true")
		r.fails(t, 1, []string{`an instance named "payroll" already exists`}, "rename", "c", "payroll")
		r.ok(t, "rename", "c", "c2")
		if r.exists("c") || !r.exists("c2") {
			t.Error("rename did not rename")
		}
		r.ok(t, "start", "c2")
		if res := r.ok(t, "exec", "c2", "--", "id", "-un"); res.stdout != "dev\n" {
			t.Errorf("after rename and start: %q", res.stdout)
		}
	})

	t.Run("rm asks, refuses without a terminal, removes box and snapshots with --force", func(t *testing.T) {
		r.ok(t, "snapshot", "c2", "keep")
		r.fails(t, 2, []string{"not deleted: no terminal to ask on"}, "rm", "c2")
		if !r.exists("c2") {
			t.Fatal("rm without --force deleted")
		}
		r.ok(t, "rm", "c2", "--force")
		if r.exists("c2") {
			t.Error("rm --force left the box")
		}
		if _, err := c.Snapshots(r.ctx, "c2"); !incus.IsNotFound(err) {
			t.Errorf("snapshots of c2 after rm: %v", err)
		}
	})

	_ = lab
}

// shellOnPty runs 'box shell NAME' on a new pseudo-terminal of rows x cols, types
// input, and when resize is "R C" resizes the window before typing it again; it returns
// everything the terminal showed.
func shellOnPty(t *testing.T, r *vmRig, name, input string, rows, cols int, resize string) string {
	t.Helper()
	master, slave := openPty(t)
	defer master.Close()
	setSize(t, master, rows, cols)
	cmd := exec.Command(r.box, "shell", name)
	cmd.Env = r.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var out syncBuf
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	waitOut := func(s string) {
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), s) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if input != "" {
		time.Sleep(300 * time.Millisecond)
		master.Write([]byte(input))
		waitOut(fmt.Sprintf("%d %d", rows, cols))
		if resize != "" {
			var rr, cc int
			fmt.Sscanf(resize, "%d %d", &rr, &cc)
			setSize(t, master, rr, cc) // the kernel sends box SIGWINCH
			time.Sleep(300 * time.Millisecond)
			master.Write([]byte("stty size\n"))
			waitOut(resize)
		}
		master.Write([]byte("exit\n"))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Errorf("box shell %s did not end; terminal showed %q", name, out.String())
	}
	time.Sleep(100 * time.Millisecond)
	return out.String()
}
