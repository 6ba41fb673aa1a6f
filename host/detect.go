package host

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// DetectBridgeMeta reports whether the kernel accepts meta ibrname/obrname in the bridge
// family (CONFIG_NFT_BRIDGE_META). It loads a probe rule in a throwaway network
// namespace, so the host's ruleset is never touched; the answer holds for the whole
// kernel. Needs CAP_SYS_ADMIN and CAP_NET_ADMIN (setup-host runs as root).
func DetectBridgeMeta() (bool, error) {
	ns, err := NewNetNS()
	if err != nil {
		return false, fmt.Errorf("detect bridge meta: %w", err)
	}
	defer ns.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return false, fmt.Errorf("detect bridge meta: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyBridge, Name: "boxprobe"})
	policy := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{
		Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityRef(-200), Policy: &policy,
	})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyBRIIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("boxprobe0")},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
	switch err := c.Flush(); {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EOPNOTSUPP):
		return false, nil
	default:
		return false, fmt.Errorf("detect bridge meta: probe rule: %w", err)
	}
}

// NewNetNS returns a handle on a fresh, empty network namespace. The namespace lives as
// long as the handle (and whatever is moved into it); close it to let it go.
//
// The namespace is made on a dedicated OS thread that is never unlocked, so Go retires
// the thread instead of handing it, switched, to other goroutines.
func NewNetNS() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // deliberately never unlocked
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("unshare network namespace: %w", err)}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		ch <- result{f, err}
	}()
	r := <-ch
	return r.f, r.err
}
