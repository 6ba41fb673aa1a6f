package bwrap

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/heavy-duty/box/policy"
)

// A tier or kernel the mode cannot serve is refused by name, never dropped.
func TestLandlockPlanCheck(t *testing.T) {
	for _, tier := range []policy.Tier{policy.NetInternet, policy.NetAllowlist, policy.NetFull} {
		var te *LandlockTierError
		if err := (LandlockPlan{Tier: tier}).Check(7); !errors.As(err, &te) || te.Tier != tier {
			t.Errorf("tier %s: got %v", tier, err)
		}
	}
	var ae *LandlockABIError
	if err := (LandlockPlan{Tier: policy.NetNone}).Check(3); !errors.As(err, &ae) || ae.Need != 4 {
		t.Errorf("ABI 3: got %v", err)
	}
	if err := (LandlockPlan{Tier: policy.NetNone}).Check(4); err != nil {
		t.Errorf("ABI 4, tier none: %v", err)
	}
	if len(LandlockNotHeld) == 0 {
		t.Error("the mode must say what does not hold")
	}
}

func TestLandlockHandledFS(t *testing.T) {
	for abi, want := range map[int]uint64{1: 1<<13 - 1, 2: 1<<14 - 1, 3: 1<<15 - 1, 4: 1<<15 - 1, 5: 1<<16 - 1} {
		if got := landlockHandledFS(abi); got != want {
			t.Errorf("ABI %d: %#x, want %#x", abi, got, want)
		}
	}
}

// Start-up of the Landlock mode against a minimal bwrap sandbox, in the same run:
// go test ./backend/bwrap -run '^$' -bench 'Start$'
func BenchmarkLandlockStart(b *testing.B) {
	if LandlockABI() < landlockModeABI {
		b.Skip("no Landlock ABI 4")
	}
	dir := b.TempDir()
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	p := LandlockPlan{Tier: policy.NetNone, ReadOnly: DefaultLandlockReadOnly, Devices: DefaultLandlockDevices, ReadWrite: []string{dir}}
	for b.Loop() {
		if code, err := LandlockRun(p, []string{"/bin/true"}, nil, dir, []uintptr{devnull.Fd(), devnull.Fd(), devnull.Fd()}); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
}

func BenchmarkBwrapStart(b *testing.B) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bwrap")
	}
	for b.Loop() {
		if err := exec.Command(bin, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
