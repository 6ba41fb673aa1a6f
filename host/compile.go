package host

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// compiled is one planned table as google/nftables objects, ready to queue on a Conn.
type compiled struct {
	table  *nftables.Table
	chains []*nftables.Chain
	rules  []*nftables.Rule
}

// compile turns the plan into netlink objects. It is pure; Apply only queues and flushes
// what it returns. The expressions are those nft itself generates for the same text, so
// `nft list` prints the ruleset back exactly as Ruleset.String renders it.
func compile(rs Ruleset) ([]compiled, error) {
	var out []compiled
	for _, t := range rs.Tables {
		if t.Name != TableName {
			return nil, fmt.Errorf("table %s %s: box only writes tables named %q", t.Family, t.Name, TableName)
		}
		fam, prio, err := familyOf(t.Family)
		if err != nil {
			return nil, err
		}
		tab := &nftables.Table{Family: fam, Name: t.Name}
		ct := compiled{table: tab}
		for _, c := range t.Chains {
			hook, err := hookOf(t.Family, c.Hook)
			if err != nil {
				return nil, fmt.Errorf("chain %s: %w", c.Name, err)
			}
			policy := nftables.ChainPolicyAccept
			ch := &nftables.Chain{
				Name:     c.Name,
				Table:    tab,
				Type:     nftables.ChainTypeFilter,
				Hooknum:  hook,
				Priority: nftables.ChainPriorityRef(prio),
				Policy:   &policy,
			}
			ct.chains = append(ct.chains, ch)
			for _, r := range c.Rules {
				ex, err := ruleExprs(t.Family, r)
				if err != nil {
					return nil, fmt.Errorf("%s %s %s: rule %q: %w", t.Family, t.Name, c.Name, r.Name, err)
				}
				ct.rules = append(ct.rules, &nftables.Rule{Table: tab, Chain: ch, Exprs: ex})
			}
		}
		out = append(out, ct)
	}
	return out, nil
}

// familyOf maps a family to its netlink value and its "filter" priority (which differs:
// NF_BR_PRI_FILTER_BRIDGED is -200, NF_IP_PRI_FILTER is 0).
func familyOf(f Family) (nftables.TableFamily, nftables.ChainPriority, error) {
	switch f {
	case FamilyBridge:
		return nftables.TableFamilyBridge, -200, nil
	case FamilyInet:
		return nftables.TableFamilyINet, 0, nil
	}
	return 0, 0, fmt.Errorf("family %q: unsupported", f)
}

func hookOf(f Family, h string) (*nftables.ChainHook, error) {
	// The bridge hooks share the inet hooks' numbers (NF_BR_LOCAL_IN = NF_INET_LOCAL_IN...).
	switch h {
	case "input":
		return nftables.ChainHookInput, nil
	case "forward":
		return nftables.ChainHookForward, nil
	case "output":
		return nftables.ChainHookOutput, nil
	}
	return nil, fmt.Errorf("hook %q: unsupported in %s", h, f)
}

func ruleExprs(f Family, r Rule) ([]expr.Any, error) {
	var (
		ex      []expr.Any
		haveIP4 bool  // meta nfproto ipv4 already checked
		haveL4  uint8 // meta l4proto already checked for this protocol
	)
	for _, m := range r.Match {
		switch m := m.(type) {
		case Iface:
			key := expr.MetaKeyIIFNAME
			if m.Out {
				key = expr.MetaKeyOIFNAME
			}
			ex = append(ex, &expr.Meta{Key: key, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(m.Name)})
		case BridgeIface:
			if f != FamilyBridge {
				return nil, fmt.Errorf("%s: only in the bridge family", m)
			}
			key := expr.MetaKeyBRIIIFNAME
			if m.Out {
				key = expr.MetaKeyBRIOIFNAME
			}
			ex = append(ex, &expr.Meta{Key: key, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(m.Name)})
		case Addr:
			if f != FamilyInet {
				return nil, fmt.Errorf("%s: only in the inet family", m)
			}
			if !m.Prefix.Addr().Is4() {
				return nil, fmt.Errorf("%s: not IPv4", m)
			}
			if !haveIP4 {
				ex = append(ex, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
					&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}})
				haveIP4 = true
			}
			off := uint32(12) // iphdr.saddr
			if m.Dst {
				off = 16 // iphdr.daddr
			}
			ex = append(ex, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4})
			p := m.Prefix.Masked()
			if p.Bits() < 32 {
				mask := binary.BigEndian.AppendUint32(nil, ^uint32(0)<<(32-p.Bits()))
				ex = append(ex, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)})
			}
			a := p.Addr().As4()
			ex = append(ex, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]})
		case Port:
			if f != FamilyInet {
				return nil, fmt.Errorf("%s: only in the inet family", m)
			}
			var proto uint8
			switch m.Proto {
			case TCP:
				proto = unix.IPPROTO_TCP
			case UDP:
				proto = unix.IPPROTO_UDP
			default:
				return nil, fmt.Errorf("protocol %q: unsupported", m.Proto)
			}
			if haveL4 != proto {
				ex = append(ex, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
					&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}})
				haveL4 = proto
			}
			off := uint32(0) // source port
			if m.Dst {
				off = 2
			}
			ex = append(ex,
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: off, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, m.Port)})
		case CtEstablishedRelated:
			if f != FamilyInet {
				// Needs bridge conntrack (CONFIG_NF_CONNTRACK_BRIDGE) there; box has no use for it.
				return nil, fmt.Errorf("%s: only in the inet family", m)
			}
			// ct state is a host-endian bitmask: (state & (established|related)) != 0.
			bits := expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED
			ex = append(ex, &expr.Ct{Register: 1, Key: expr.CtKeySTATE},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
					Mask: binary.NativeEndian.AppendUint32(nil, bits), Xor: make([]byte, 4)},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)})
		default:
			return nil, fmt.Errorf("match %T: unsupported", m)
		}
	}
	switch r.Verdict {
	case Accept:
		ex = append(ex, &expr.Verdict{Kind: expr.VerdictAccept})
	case Drop:
		ex = append(ex, &expr.Verdict{Kind: expr.VerdictDrop})
	default:
		return nil, fmt.Errorf("verdict %q: unsupported", r.Verdict)
	}
	return ex, nil
}

// ifname encodes an interface name as nft does: an exact name is NUL-padded to
// IFNAMSIZ; "veth*" compares only the prefix bytes, which is how a wildcard matches.
func ifname(n string) []byte {
	if p, ok := strings.CutSuffix(n, "*"); ok {
		return []byte(p)
	}
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}
