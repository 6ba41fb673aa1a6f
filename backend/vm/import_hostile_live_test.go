package vm_test

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill"
	"gopkg.in/yaml.v3"
)

// TestVMImportCraftedMembersLive hands box import exports altered the ways Incus
// advisories found incusd follows out of an instance's tree on the host, as root: a
// template whose target climbs out of the rootfs or runs through a symlink in it, a
// template that includes a host file, a symlink where incusd keeps its own files, a
// hardlink out of the rootfs. Each is refused by name before incusd receives the whole
// file: nothing is created, nothing is written on the host. With the member check off
// (BOX_UNSAFE_OFF=import-members) incusd receives them.
func TestVMImportCraftedMembersLive(t *testing.T) {
	t.Parallel() // its own lab: see live_test.go
	r := newVMRig(t)
	dir := t.TempDir()
	r.ok(t, "new", "--name", "src", "--container")
	r.ok(t, "stop", "src")
	clean := filepath.Join(dir, "src.tar")
	rawExport(t, r, "src", clean)
	pwned := filepath.Join(dir, "pwned")
	hostDir := t.TempDir()
	reg := func(name, content string) crafted {
		return crafted{h: &tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}, body: content}
	}
	link := func(typ byte, name, to string) crafted {
		return crafted{h: &tar.Header{Name: name, Mode: 0o777, Typeflag: typ, Linkname: to}}
	}
	cases := []struct {
		name      string
		templates map[string]string // target -> template file
		members   []crafted
		want      string
	}{
		{"a template target out of the rootfs", map[string]string{"/../../../../../../../.." + pwned: "pwn.tpl"},
			[]crafted{reg("backup/container/templates/pwn.tpl", "pwned\n")}, "is not a plain absolute path"},
		{"a template target through a rootfs symlink", map[string]string{"/hostdir/pwned": "pwn.tpl"},
			[]crafted{reg("backup/container/templates/pwn.tpl", "pwned\n"), link(tar.TypeSymlink, "backup/container/rootfs/hostdir", hostDir)},
			"runs through the symlink /hostdir"},
		{"a template that includes a host file", map[string]string{"/etc/motd": "motd.tpl"},
			[]crafted{reg("backup/container/templates/motd.tpl", `{% include "/etc/shadow" %}`)}, "reads another file"},
		{"a symlink where incusd keeps its files", nil,
			[]crafted{link(tar.TypeSymlink, "backup/container/exec-output", hostDir)}, "is a symlink"},
		{"a hardlink out of the rootfs", nil,
			[]crafted{link(tar.TypeLink, "backup/container/rootfs/shadow", "backup/container/rootfs/../../../etc/shadow")}, "hardlink out of its rootfs"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, "crafted"+strconv.Itoa(i)+".tar")
			craftExport(t, clean, file, c.templates, c.members)
			name := "crafted" + strconv.Itoa(i)
			r.fails(t, 1, []string{c.want, "box export never writes that", "nothing was imported", "do not import this file"}, "import", file, "--name", name)
			if r.exists(name) {
				t.Errorf("%s was created", name)
			}
			for _, p := range []string{pwned, filepath.Join(hostDir, "pwned")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("BREACH: the export wrote %s on the host", p)
				}
			}
		})
	}

	t.Run("with the member check off incusd takes the crafted file and writes through it", func(t *testing.T) {
		file := filepath.Join(dir, "crafted3.tar") // exec-output: a symlink to hostDir
		c := exec.Command(unsafeBoxBinary(t), "import", file, "--name", "unchecked")
		c.Env = append(append([]string{}, r.env...), "BOX_UNSAFE_OFF=import-members")
		res := runResult(t, c)
		if res.code != 0 || !r.exists("unchecked") {
			t.Fatalf("with the check off the crafted export was not imported: exit %d: %s", res.code, res.stderr)
		}
		// What a later exec with its output recorded does (GHSA-73hr-m85f-64v9): incusd
		// writes the output files through the box's own exec-output symlink, on the host.
		body := map[string]any{"command": []string{"echo", "written on the host by incusd"},
			"record-output": true, "wait-for-websocket": false, "interactive": false}
		if err := r.client.Query(r.ctx, "POST", "/instances/unchecked/exec", body, nil); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			got, _ := filepath.Glob(filepath.Join(hostDir, "exec_*"))
			if len(got) > 0 {
				b, _ := os.ReadFile(got[0])
				t.Logf("BREACH with the check off: incusd wrote %s on the host: %q", got[0], b)
				for _, g := range got {
					os.Remove(g)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Logf("this incusd did not write through exec-output (a release with GHSA-73hr-m85f-64v9 fixed)")
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("an instance with saved running state is refused", func(t *testing.T) {
		// box never stops or snapshots a box statefully: saved state from elsewhere is
		// process memory a start would restore (CRIU, or QEMU's migration stream) on
		// this host.
		file := filepath.Join(dir, "stateful.tar")
		editExport(t, clean, file, nil, []crafted{reg("backup/container/state/inventory.img", "x")}, func(m string, doc map[string]any) {
			if m == "backup/container/backup.yaml" {
				doc["container"].(map[string]any)["stateful"] = true
			}
		})
		r.fails(t, 1, []string{"saved running state", "never gives a box"}, "import", file, "--name", "stateful")
		if r.exists("stateful") {
			t.Error("stateful was left")
		}
	})

	t.Run("an export of optimized storage is refused before the upload", func(t *testing.T) {
		// box export never asks for the storage driver's own send streams, which
		// incusd would replay on the host with btrfs receive or zfs receive.
		file := filepath.Join(dir, "optimized.tar")
		editExport(t, clean, file, nil, nil, func(m string, doc map[string]any) {
			if m == "backup/index.yaml" {
				doc["optimized"] = true
			}
		})
		r.fails(t, 1, []string{"the export sets optimized storage", "never gives a box"}, "import", file, "--name", "optimized")
		if r.exists("optimized") {
			t.Error("optimized was created")
		}
	})

	t.Run("the untouched export still imports", func(t *testing.T) {
		r.ok(t, "import", clean, "--name", "clean")
	})
}

// crafted is one member an attacker adds to an export.
type crafted struct {
	h    *tar.Header
	body string
}

// craftExport copies the plain-tar export in to out, adding templates (target ->
// template file, applied at create, copy and every start) to the container's
// metadata.yaml and appending members.
func craftExport(t *testing.T, in, out string, templates map[string]string, members []crafted) {
	t.Helper()
	editExport(t, in, out, templates, members, nil)
}

// editExport is craftExport that also applies edit to backup/index.yaml (what box reads
// first) and the instance's backup.yaml (what incusd creates the instance from).
func editExport(t *testing.T, in, out string, templates map[string]string, members []crafted, edit func(member string, doc map[string]any)) {
	t.Helper()
	src, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	tr, tw := tar.NewReader(src), tar.NewWriter(dst)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if m := strings.TrimPrefix(h.Name, "./"); (m == "backup/container/backup.yaml" || m == "backup/index.yaml") && edit != nil {
			var doc map[string]any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			edit(m, doc)
			if b, err = yaml.Marshal(doc); err != nil {
				t.Fatal(err)
			}
			h.Size = int64(len(b))
		}
		if strings.TrimPrefix(h.Name, "./") == "backup/container/metadata.yaml" && len(templates) > 0 {
			var doc map[string]any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			tm, _ := doc["templates"].(map[string]any)
			if tm == nil {
				tm = map[string]any{}
			}
			for target, name := range templates {
				tm[target] = map[string]any{"when": []string{"create", "copy", "start"}, "template": name}
			}
			doc["templates"] = tm
			if b, err = yaml.Marshal(doc); err != nil {
				t.Fatal(err)
			}
			h.Size = int64(len(b))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range members {
		m.h.Size = int64(len(m.body))
		if err := tw.WriteHeader(m.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// The drill's import row: PASS with box as built, BREACH when box is built with the
// member check switched off (BOX_UNSAFE_OFF=import-members).
func TestVMDrillImportRowLive(t *testing.T) {
	t.Parallel() // its own lab: see live_test.go
	r := newVMRig(t)
	o := drill.CraftedImportOptions{Client: r.client, Run: drill.BinaryRunner(r.box, r.env), Logf: t.Logf}
	o.Mint = drill.MintByVerb(o.Run, "blank")
	row := drill.CraftedImport(r.ctx, o)
	t.Logf("as built: %s (%s)", row.Status, row.Observed)
	if row.Status != drill.Pass || !strings.Contains(row.Observed, "exec-output") {
		t.Errorf("as built: %s (%s), want PASS naming exec-output", row.Status, row.Observed)
	}
	env := append(append([]string{}, r.env...), "BOX_UNSAFE_OFF=import-members")
	o.Run = drill.BinaryRunner(unsafeBoxBinary(t), env)
	o.Mint = drill.MintByVerb(o.Run, "blank")
	row = drill.CraftedImport(r.ctx, o)
	t.Logf("check off: %s (%s)", row.Status, row.Observed)
	if row.Status != drill.Breach {
		t.Errorf("check off: %s (%s), want BREACH", row.Status, row.Observed)
	}
	var insts []string
	if err := r.client.Query(r.ctx, "GET", "/instances", nil, &insts); err != nil {
		t.Fatal(err)
	}
	for _, i := range insts {
		if strings.Contains(i, "import-drill-") {
			t.Errorf("the row left %s", i)
		}
	}
}
