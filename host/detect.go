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
// The namespace is made on a locked OS thread that goes back to the namespace it came
// from before it is unlocked. Leaving it switched and locked is not enough: the
// goroutine may run on the main thread, which Go parks instead of retiring, and the
// main thread is the one /proc/self/net reads through (a parked one in an empty
// namespace emptied the vm drill's /proc/net/arp and /proc/net/route). If going back
// fails, the thread stays locked and the error is returned.
func NewNetNS() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("open own network namespace: %w", err)}
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // unshare failed: the thread is where it was
			ch <- result{err: fmt.Errorf("unshare network namespace: %w", err)}
			return
		}
		f, ferr := os.Open("/proc/thread-self/ns/net")
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			if f != nil {
				f.Close()
			}
			ch <- result{err: fmt.Errorf("return to own network namespace: %w", err)} // still locked
			return
		}
		runtime.UnlockOSThread()
		ch <- result{f, ferr}
	}()
	r := <-ch
	return r.f, r.err
}
