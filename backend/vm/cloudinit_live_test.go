package vm_test

// The cloud-init step of box new, for real: the lab image that runs cloud-init
// (incuslab.CloudInitRecipe, built once per machine and cached), a good user-data that
// creates the template's user, and bad ones that box refuses to hand over.

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill/incuslab"
)

const cloudBoxEnv = `BOX_DESCRIPTION="the lab's cloud-init image"
BOX_IMAGE="` + incuslab.CloudInitAlias + `"
BOX_USER="dev"
BOX_CPU="1"
BOX_MEMORY="512MiB"
BOX_DISK="2GiB"
`

func TestVMCloudInitLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	r := newVMRig(t)
	if _, err := r.lab.ImportCloudInit(r.ctx); err != nil {
		t.Fatal(err)
	}
	tmpl := func(name, userData string) {
		r.writeFile(filepath.Join(r.tmpls, name, "box.env"), cloudBoxEnv)
		r.writeFile(filepath.Join(r.tmpls, name, "user-data.yaml"), userData)
	}
	tmpl("good", "#cloud-config\nusers:\n  - name: dev\n    shell: /bin/bash\nruncmd:\n  - [touch, /home/dev/provisioned]\n")
	tmpl("bad", "#cloud-config\nusers:\n  - name: dev\nruncmd:\n  - [sh, -c, 'echo box-test-provisioning-broke >&2; exit 3']\n")
	tmpl("slow", "#cloud-config\nusers:\n  - name: dev\nruncmd:\n  - [sleep, '3600']\n")

	stopped := func(t *testing.T, name string) {
		t.Helper()
		inst, _, err := r.client.Instance(context.Background(), name)
		if err != nil {
			t.Fatalf("%s was not kept for inspection: %v", name, err)
		}
		if inst.Status != "Stopped" {
			t.Errorf("%s is %s, want Stopped (not handed over)", name, inst.Status)
		}
	}

	t.Run("a good user-data creates the user before the box is handed over", func(t *testing.T) {
		res := r.ok(t, "new", "--name", "good", "--template", "good", "--container")
		if !strings.Contains(res.stderr, "good is ready") || strings.Contains(res.stderr, "warning") {
			t.Errorf("stderr: %s", res.stderr)
		}
		// No stand-in here: cloud-init made the user, and box enters as it.
		out := r.ok(t, "exec", "good", "--", "sh", "-c", "id -un; test -e ~/provisioned && echo provisioned")
		if out.stdout != "dev\nprovisioned\n" {
			t.Errorf("exec as the stamped user: %q", out.stdout)
		}
	})

	t.Run("a failing user-data is refused, the box kept stopped with cloud-init's report", func(t *testing.T) {
		res := r.fails(t, 1, []string{`cloud-init failed in box "bad"`, "not handed over", "kept, stopped",
			"status: error", "box rm --force bad", "box start bad"}, "new", "--name", "bad", "--template", "bad", "--container")
		t.Logf("the refusal:\n%s", res.stderr)
		if !strings.Contains(res.stderr, "box-test-provisioning-broke") {
			t.Errorf("the report does not quote the log's error line")
		}
		if strings.Contains(res.stderr, "is ready") {
			t.Errorf("a failed box was announced ready: %s", res.stderr)
		}
		stopped(t, "bad")
		r.ok(t, "rm", "--force", "bad")
	})

	t.Run("a user-data that does not finish within the time-box is refused", func(t *testing.T) {
		// The time-box covers the whole launch, the IPv4 lease included: under CI's load a
		// lease alone has taken over 20s, so the box gets 60s; cloud-init sleeps an hour.
		r.fails(t, 1, []string{`cloud-init did not finish in box "slow" within 1m0s`, "kept, stopped", "longer --timeout"},
			"new", "--name", "slow", "--template", "slow", "--container", "--timeout", "60s")
		stopped(t, "slow")
	})

	t.Run("an image without cloud-init is named, not passed over in silence", func(t *testing.T) {
		res := r.ok(t, "new", "--name", "plain", "--container") // the lab's blank: user-data, plain image
		if !strings.Contains(res.stderr, "has no cloud-init: the template's user-data was not applied") {
			t.Errorf("no warning: %s", res.stderr)
		}
	})
}
