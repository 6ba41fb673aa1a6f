package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/testenv"
)

// TestTeardownAllOrNothing: with a box and an instance box did not mint on the stack,
// teardown-host --force refuses before it deletes anything (the box and the whole stack
// are still there); without the foreign instance it removes all of it.
func TestTeardownAllOrNothing(t *testing.T) {
	testenv.RequireRoot(t)
	h := startHostLab(t)
	ctx := context.Background()
	c := h.incus.Client
	// BOX_SUBNET stands in for --subnet (upstream's scripting form).
	t.Setenv("BOX_SUBNET", "10.93.7.0/24")
	h.setup(t)
	if n, err := c.Network(ctx, host.BridgeName); err != nil || n.Config["ipv4.address"] != "10.93.7.1/24" {
		t.Errorf("BOX_SUBNET=10.93.7.0/24: bridge %+v, %v", n, err)
	}
	for name, cfg := range map[string]map[string]string{
		"keep":    {incus.KeyBox: "1"},
		"payroll": {"user.owner": "finance"},
	} {
		must(t, c.Create(ctx, incus.InstancesPost{Name: name, Source: incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Config: cfg, Profiles: []string{host.ProfileName}}))
	}
	must(t, c.Start(ctx, "keep"))
	before := h.objects(t)

	_, errOut, code := h.run(t, "teardown-host", "--force", "--unit-dir", h.unitDir)
	if code != 1 || !strings.Contains(errOut, "payroll (profile box-net)") || !strings.Contains(errOut, "nothing was removed") ||
		!strings.Contains(errOut, "box: hint: move them off the stack") {
		t.Errorf("with a foreign instance on the stack: exit %d, %s", code, errOut)
	}
	if strings.Contains(errOut, "keep (") {
		t.Errorf("the box was named as foreign: %s", errOut)
	}
	inst, _, err := c.Instance(ctx, "keep")
	if err != nil {
		t.Fatalf("the box was deleted by a teardown that then refused: %v", err)
	}
	if !inst.Running() {
		t.Errorf("the box was stopped by a teardown that refused: %s", inst.Status)
	}
	if after := h.objects(t); after.Tables != before.Tables || after.Profile.Name == "" || after.Network.Name == "" || after.ACL.Name == "" {
		t.Errorf("the stack changed")
	}

	// --purge-incus's precondition is checked first too: here it is the socket (the lab
	// daemon is not the system's), and the box is still there after it.
	_, errOut, code = h.run(t, "teardown-host", "--force", "--purge-incus", "--unit-dir", h.unitDir)
	if code != 1 || !strings.Contains(errOut, "not the system's") {
		t.Errorf("--purge-incus: exit %d, %s", code, errOut)
	}

	must(t, c.Delete(ctx, "payroll"))
	h.mustRun(t, "teardown-host", "--force", "--unit-dir", h.unitDir)
	if _, _, err := c.Instance(ctx, "keep"); !incus.IsNotFound(err) {
		t.Errorf("the box survived --force: %v", err)
	}
	if err := host.Leftovers(ctx, c, h.conn, host.BridgeName, h.unitDir); err != nil {
		t.Error(err)
	}
}

func TestNotBoxes(t *testing.T) {
	got := host.NotBoxes([]incus.Instance{{Name: "a", Config: map[string]string{incus.KeyBox: "1"}},
		{Name: "legacy", Config: map[string]string{incus.KeyLegacy: "1"}}, {Name: "db"}})
	if len(got) != 1 || got[0] != "db" {
		t.Errorf("notBoxes = %q", got)
	}
}
