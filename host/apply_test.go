package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// recorder stands in for the kernel: it keeps every batch a Conn sends.
type recorder struct{ sends [][]netlink.Message }

func (r *recorder) conn(t *testing.T) *nftables.Conn {
	t.Helper()
	c, err := nftables.New(nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		if req != nil { // nil: Flush is reading acks; answering nothing means "ok"
			r.sends = append(r.sends, req)
		}
		return nil, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// describe renders one netlink message readably: operation, family, table, chain.
func describe(m netlink.Message) string {
	typ := uint16(m.Header.Type)
	switch typ {
	case unix.NFNL_MSG_BATCH_BEGIN:
		return "batch-begin"
	case unix.NFNL_MSG_BATCH_END:
		return "batch-end"
	}
	if typ>>8 != unix.NFNL_SUBSYS_NFTABLES {
		return fmt.Sprintf("unknown %#x", typ)
	}
	op := map[uint16]string{
		unix.NFT_MSG_NEWTABLE: "add table", unix.NFT_MSG_DELTABLE: "delete table",
		unix.NFT_MSG_NEWCHAIN: "add chain", unix.NFT_MSG_NEWRULE: "add rule",
	}[typ&0xff]
	if op == "" {
		op = fmt.Sprintf("op %d", typ&0xff)
	}
	fam := map[byte]string{unix.NFPROTO_BRIDGE: "bridge", unix.NFPROTO_INET: "inet"}[m.Data[0]]
	if fam == "" {
		fam = fmt.Sprintf("family %d", m.Data[0])
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return "undecodable: " + err.Error()
	}
	var table, chain string
	for ad.Next() {
		// NFTA_TABLE_NAME, NFTA_CHAIN_TABLE and NFTA_RULE_TABLE are all attribute 1;
		// the chain is NFTA_CHAIN_NAME (3) in a chain message, NFTA_RULE_CHAIN (2) in a rule.
		switch {
		case ad.Type() == 1:
			table = ad.String()
		case ad.Type() == 3 && typ&0xff == unix.NFT_MSG_NEWCHAIN,
			ad.Type() == 2 && typ&0xff == unix.NFT_MSG_NEWRULE:
			chain = ad.String()
		}
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s %s", op, fam, table, chain))
}

func describeAll(ms []netlink.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, describe(m))
	}
	return out
}

func TestApplySendsOneBatch(t *testing.T) {
	rs, err := Plan(testInputs(false))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	c := rec.conn(t)
	if err := Apply(c, rs); err != nil {
		t.Fatal(err)
	}
	if len(rec.sends) != 1 {
		t.Fatalf("Apply sent %d batches, want 1", len(rec.sends))
	}
	want := []string{
		"batch-begin",
		"add table bridge box", "delete table bridge box", "add table bridge box",
		"add chain bridge box forward",
		"add rule bridge box forward", "add rule bridge box forward",
		"add rule bridge box forward", "add rule bridge box forward",
		"add table inet box", "delete table inet box", "add table inet box",
		"add chain inet box input", "add chain inet box forward", "add chain inet box output",
	}
	for range 5 {
		want = append(want, "add rule inet box input")
	}
	want = append(want, "add rule inet box forward", "add rule inet box forward")
	for range 3 {
		want = append(want, "add rule inet box output")
	}
	want = append(want, "batch-end")
	if diff := cmp.Diff(want, describeAll(rec.sends[0])); diff != "" {
		t.Errorf("Apply batch (-want +got):\n%s", diff)
	}

	// Re-applying sends the same batch: same messages, same bytes (bar sequence numbers).
	if err := Apply(c, rs); err != nil {
		t.Fatal(err)
	}
	if len(rec.sends) != 2 {
		t.Fatalf("second Apply: %d batches in all, want 2", len(rec.sends))
	}
	first, second := rec.sends[0], rec.sends[1]
	if len(first) != len(second) {
		t.Fatalf("re-apply sent %d messages, first apply %d", len(second), len(first))
	}
	for i := range first {
		a, b := first[i], second[i]
		if a.Header.Type != b.Header.Type || a.Header.Flags != b.Header.Flags || string(a.Data) != string(b.Data) {
			t.Errorf("message %d (%s) differs on re-apply:\n%x\n%x", i, describe(a), a.Data, b.Data)
		}
	}
}

func TestRemoveSendsOneBatch(t *testing.T) {
	var rec recorder
	if err := Remove(rec.conn(t)); err != nil {
		t.Fatal(err)
	}
	want := []string{"batch-begin",
		"add table bridge box", "delete table bridge box",
		"add table inet box", "delete table inet box",
		"batch-end"}
	if len(rec.sends) != 1 {
		t.Fatalf("Remove sent %d batches, want 1", len(rec.sends))
	}
	if diff := cmp.Diff(want, describeAll(rec.sends[0])); diff != "" {
		t.Errorf("Remove batch (-want +got):\n%s", diff)
	}
}

// Apply refuses a ruleset that names a table box does not own, before sending anything.
func TestApplyTouchesOnlyBoxTables(t *testing.T) {
	rs, _ := Plan(testInputs(false))
	rs.Tables[1].Name = "filter"
	var rec recorder
	if err := Apply(rec.conn(t), rs); err == nil {
		t.Fatal("Apply accepted a table not named box")
	}
	if len(rec.sends) != 0 {
		t.Errorf("Apply sent %d batches for a refused ruleset", len(rec.sends))
	}
}

// The bridge-meta rule cannot be loaded on a kernel without CONFIG_NFT_BRIDGE_META, so
// its expressions are pinned here to what `nft --debug=netlink` shows for
// `meta ibrname "boxnet" meta obrname "boxnet" drop`.
func TestCompileBridgeMetaRule(t *testing.T) {
	rs, err := Plan(testInputs(true))
	if err != nil {
		t.Fatal(err)
	}
	tabs, err := compile(rs)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tabs[0].rules); n != 1 {
		t.Fatalf("bridge-meta plan: %d bridge rules, want 1", n)
	}
	name := append([]byte("boxnet"), make([]byte, 10)...)
	want := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyBRIIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
		&expr.Meta{Key: expr.MetaKeyBRIOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
	if diff := cmp.Diff(want, tabs[0].rules[0].Exprs); diff != "" {
		t.Errorf("bridge-meta rule (-want +got):\n%s", diff)
	}
}
