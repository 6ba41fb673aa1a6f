package host

import (
	"fmt"

	"github.com/google/nftables"
)

// Apply replaces the box tables with rs in one netlink batch (one transaction): the
// kernel switches from the old box rules to the new ones atomically, never through an
// empty firewall, and re-applying leaves exactly one copy. No other table is touched.
func Apply(c *nftables.Conn, rs Ruleset) error {
	tabs, err := compile(rs)
	if err != nil {
		return err
	}
	for _, t := range tabs {
		deleteTable(c, t.table)
		c.AddTable(t.table)
		for _, ch := range t.chains {
			c.AddChain(ch)
		}
		for _, r := range t.rules {
			c.AddRule(r)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("apply box firewall: %w", err)
	}
	return nil
}

// Remove deletes the box tables (bridge box, inet box) in one batch. Removing what is not
// there is not an error, so teardown can be re-run.
func Remove(c *nftables.Conn) error {
	for _, f := range []nftables.TableFamily{nftables.TableFamilyBridge, nftables.TableFamilyINet} {
		deleteTable(c, &nftables.Table{Family: f, Name: TableName})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("remove box firewall: %w", err)
	}
	return nil
}

// deleteTable queues "add, delete": adding first makes the delete valid whether or not
// the table exists (nft's "table x; delete table x" idiom), and the delete drops every
// chain and rule of a previous apply, including chains a newer plan no longer has.
func deleteTable(c *nftables.Conn, t *nftables.Table) {
	c.AddTable(t)
	c.DelTable(t)
}

// ApplyFirewall is the whole host-firewall step of setup-host and of the boot unit:
// detect bridge meta, plan for the box bridge (gatewayCIDR as Incus reports
// ipv4.address), apply in one batch. It returns what it applied, for printing. Pass
// nftables.New() for the host's own ruleset.
func ApplyFirewall(c *nftables.Conn, bridge, gatewayCIDR string) (Ruleset, error) {
	gw, err := ParseGateway(gatewayCIDR)
	if err != nil {
		return Ruleset{}, err
	}
	meta, err := DetectBridgeMeta()
	if err != nil {
		return Ruleset{}, err
	}
	rs, err := Plan(Inputs{Bridge: bridge, Gateway: gw, BridgeMeta: meta})
	if err != nil {
		return Ruleset{}, err
	}
	return rs, Apply(c, rs)
}
