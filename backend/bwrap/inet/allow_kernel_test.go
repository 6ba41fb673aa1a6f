package inet

import (
	"os/exec"
	"testing"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/internal/testenv"
)

// The allowlist tier's table goes into a real kernel and `nft list` reads back the golden
// text, which is also what Table.String renders.
func TestAllowPlanKernelGolden(t *testing.T) {
	name, f := scratchNetns(t)
	nft := testenv.RequireTool(t, "nft")
	tbl := AllowPlan()
	golden(t, "allow.nft", tbl.String())
	for i := 0; i < 2; i++ {
		c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		if err := ApplyTable(c, tbl); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		if err := VerifyTable(c, tbl); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	out, err := exec.Command("ip", "netns", "exec", name, nft, "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, out)
	}
	golden(t, "allow.nft", string(out))
}
