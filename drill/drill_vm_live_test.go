package drill_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/internal/testenv"
)

// TestDrillVMTemplateAndCarveOut: the vm drill mints its boxes from the host's default
// template (here a blank that names a local image, as on a host without an image
// server) through box new, and judges the gateway's port 53, where the bridge's DNS
// listens, as the contract's carve-out: PASS, not BREACH.
func TestDrillVMTemplateAndCarveOut(t *testing.T) {
	testenv.RequireRoot(t)
	h := startHostLab(t)
	h.setup(t)
	args := append(drillArgs(h), "--host-port", "53")
	for i, a := range args { // drillArgs names 8080; this run probes 53
		if a == "8080" {
			args = append(args[:i-1], args[i+1:]...)
			break
		}
	}
	out, errOut, code := h.run(t, args...)
	var list []drill.Result
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("drill output is not JSON: %v\n%s", err, errOut)
	}
	rs := map[string]drill.Result{}
	for _, r := range list {
		rs[r.ID] = r
	}
	if code != 0 {
		t.Errorf("drill exit %d: %s", code, errOut)
	}
	if r := rs["host:gateway:53"]; r.Status != drill.Pass || !strings.Contains(r.Probe, "carve-out") {
		t.Errorf("host:gateway:53: %s (%s: %s)", r.Status, r.Probe, r.Observed)
	}
	for id, r := range rs {
		if strings.HasPrefix(id, "host:public:") && r.Status != drill.Pass {
			t.Errorf("%s: %s (%s): DNS on the host's other addresses is no carve-out", id, r.Status, r.Observed)
		}
	}
	if !strings.Contains(errOut, "template blank (image "+incuslab.ImageAlias+")") {
		t.Errorf("the drill did not mint from the host's blank template: %s", errOut)
	}
	// --image is refused by name, before anything runs.
	if _, errOut, code := h.run(t, "drill", "--backend", "vm", "--image", "images:debian/12/cloud"); code != 2 || !strings.Contains(errOut, "--image is gone") {
		t.Errorf("--image: exit %d, %s", code, errOut)
	}
}
