package inet

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// FilterMain is the body of `box __inet-filter`. It runs inside the sandbox's network
// namespace, in the user namespace that owns it, as that namespace's uid 0 (nsenter put
// it there; bwrap --dev maps the caller's uid to 0 in its outer user namespace). It reads a Ruleset as JSON on stdin, installs it in one batch,
// waits until the helper has configured the link, checks the filter is still in place
// and exits 0. Any failure: a message on stderr and exit 1.
//
// Flags: -netns-ino N (refuse to touch any other namespace, e.g. the host's if run by
// hand) or -not-netns-ino N (any namespace but N: the --check dry run), and
// -wait-link DURATION (0 = do not wait). With -allowlist it sets up the allowlist tier
// instead (allowSetup).
func FilterMain(args []string) int {
	if err := filterMain(args, os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "box %s: %v\n", FilterSubcommand, err)
		return 1
	}
	return 0
}

func filterMain(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet(FilterSubcommand, flag.ContinueOnError)
	ino := fs.Uint64("netns-ino", 0, "inode of the network namespace to filter")
	notIno := fs.Uint64("not-netns-ino", 0, "filter any network namespace but this one (box --check)")
	wait := fs.Duration("wait-link", 0, "wait this long for the helper's link")
	allow := fs.Bool("allowlist", false, "set up the allowlist tier (table on stdin) and hand its sockets over fd 6")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		return fmt.Errorf("stat own netns: %w", err)
	}
	switch {
	case *ino != 0 && *notIno == 0:
		if st.Ino != *ino {
			return fmt.Errorf("in netns %d, not the sandbox's %d: refusing to install the filter", st.Ino, *ino)
		}
	case *ino == 0 && *notIno != 0:
		if st.Ino == *notIno {
			return fmt.Errorf("still in the host's netns %d: refusing to install the filter", st.Ino)
		}
	default:
		return errors.New("exactly one of -netns-ino and -not-netns-ino is required")
	}
	if *allow {
		return allowSetup(stdin)
	}
	var rs Ruleset
	if err := json.NewDecoder(stdin).Decode(&rs); err != nil {
		return fmt.Errorf("read ruleset: %w", err)
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	if err := Apply(c, rs); err != nil {
		return err
	}
	if *wait > 0 {
		if err := waitLink(*wait); err != nil {
			return err
		}
	}
	// Re-read after the helper configured the link: nothing may have replaced the filter.
	return Verify(c, rs)
}

// Apply installs rs in the namespace of c in one batch, replacing any previous table of
// the same name (re-applying is idempotent).
func Apply(c *nftables.Conn, rs Ruleset) error {
	return ApplyTable(c, Table{Name: rs.Table, Chains: []Chain{{Name: rs.Chain, Rules: rs.Rules}}})
}

// Verify checks that the table of rs is installed with its output hook and as many rules.
func Verify(c *nftables.Conn, rs Ruleset) error {
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: rs.Table}
	ch, err := c.ListChain(t, rs.Chain)
	if err != nil {
		return fmt.Errorf("verify chain %s of table inet %s: %w", rs.Chain, rs.Table, err)
	}
	if ch.Hooknum == nil || *ch.Hooknum != *nftables.ChainHookOutput {
		return fmt.Errorf("verify chain %s of table inet %s: not on the output hook", rs.Chain, rs.Table)
	}
	rules, err := c.GetRules(t, ch)
	if err != nil {
		return fmt.Errorf("verify rules of table inet %s: %w", rs.Table, err)
	}
	if len(rules) != len(rs.Rules) {
		return fmt.Errorf("verify table inet %s: %d rules installed, %d planned", rs.Table, len(rules), len(rs.Rules))
	}
	return nil
}

// exprs translates r into the expressions nft itself generates for the same text, so
// that `nft list` prints Rule.String().
func (r Rule) exprs() []expr.Any {
	var e []expr.Any
	cmp := func(data []byte) { e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data}) }
	if r.OifLo {
		e = append(e, &expr.Meta{Key: expr.MetaKeyOIF, Register: 1})
		cmp(binary.NativeEndian.AppendUint32(nil, LoopbackIndex))
	}
	if r.OifName != "" {
		e = append(e, &expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1})
		cmp(ifname(r.OifName))
	}
	if r.IPv6 {
		e = append(e, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1})
		cmp([]byte{unix.NFPROTO_IPV6})
	}
	if r.Daddr.IsValid() {
		// In an inet table "ip daddr" depends on the packet being IPv4 ("ip6": IPv6).
		proto, off, n := byte(unix.NFPROTO_IPV4), uint32(16), uint32(4)
		if r.Daddr.Addr().Is6() {
			proto, off, n = unix.NFPROTO_IPV6, 24, 16
		}
		e = append(e, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1})
		cmp([]byte{proto})
		e = append(e, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n})
		addr := r.Daddr.Masked().Addr().AsSlice()
		if bits := r.Daddr.Bits(); bits < int(n)*8 {
			mask := net.CIDRMask(bits, int(n)*8)
			e = append(e, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: mask, Xor: make([]byte, n)})
		}
		op := expr.CmpOpEq
		if r.NotDst {
			op = expr.CmpOpNeq
		}
		e = append(e, &expr.Cmp{Op: op, Register: 1, Data: addr})
	}
	if r.Proto != "" {
		proto := byte(unix.IPPROTO_TCP)
		if r.Proto == "udp" {
			proto = unix.IPPROTO_UDP
		}
		e = append(e, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1})
		cmp([]byte{proto})
		if r.Dport != 0 {
			e = append(e, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
			cmp(binary.BigEndian.AppendUint16(nil, r.Dport))
		}
	}
	switch r.Verdict {
	case Accept:
		e = append(e, &expr.Verdict{Kind: expr.VerdictAccept})
	case Reject:
		e = append(e, &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED})
	case Redirect:
		e = append(e, &expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, r.ToPort)},
			&expr.Redir{RegisterProtoMin: 1, Flags: unix.NF_NAT_RANGE_PROTO_SPECIFIED})
	}
	return e
}

func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}

// waitLink waits until the helper has configured the sandbox's link: an interface other
// than lo is up with an IPv4 address, and a default route exists.
func waitLink(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		up, route := linkUp(), defaultRoute()
		if up && route {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("network helper did not configure the sandbox link within %v (interface up: %v, default route: %v)", d, up, route)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func linkUp() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return true
			}
		}
	}
	return false
}

// defaultRoute reads /proc/net/route, which shows the reading task's network namespace.
func defaultRoute() bool {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 2 && fields[1] == "00000000" {
			return true
		}
	}
	return false
}
