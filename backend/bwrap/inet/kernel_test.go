package inet

import (
	"os"
	"os/exec"
	"testing"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/internal/testenv"
)

// scratchNetns makes a throwaway network namespace (as root) for the duration of t.
func scratchNetns(t *testing.T) (name string, f *os.File) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip")
	name = "boxinet-test-" + t.Name()
	exec.Command("ip", "netns", "del", name).Run() // a previous run's leftover, if any
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return name, f
}

// The ruleset goes into a real kernel through google/nftables, and `nft list` reads back
// exactly the golden text: one file proves both the rendering and the kernel's reading.
// Applying twice is idempotent.
func TestApplyKernelGolden(t *testing.T) {
	name, f := scratchNetns(t)
	nft := testenv.RequireTool(t, "nft")
	for _, h := range []Helper{Pasta, Slirp4netns} {
		rs := Plan(Options{Helper: h, HostAddrs: laptop, HostNets: laptopNets})
		for i := 0; i < 2; i++ {
			c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
			if err != nil {
				t.Fatal(err)
			}
			if err := Apply(c, rs); err != nil {
				t.Fatalf("%s apply %d: %v", h, i, err)
			}
			if err := Verify(c, rs); err != nil {
				t.Fatalf("%s verify %d: %v", h, i, err)
			}
		}
		out, err := exec.Command("ip", "netns", "exec", name, nft, "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		golden(t, "plan-"+string(h)+".nft", string(out))
	}
}
