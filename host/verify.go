package host

import (
	"bytes"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Verify compares the box tables in the kernel with rs and returns one line per
// difference; none means the planned firewall is in place, exactly. doctor uses it
// (re-applying would change nothing), and tests use it after Apply.
func Verify(c *nftables.Conn, rs Ruleset) ([]string, error) {
	want, err := compile(rs)
	if err != nil {
		return nil, err
	}
	var drift []string
	for i, wt := range want {
		pt := rs.Tables[i]
		where := fmt.Sprintf("table %s %s", pt.Family, pt.Name)
		tables, err := c.ListTablesOfFamily(wt.table.Family)
		if err != nil {
			return nil, fmt.Errorf("verify: list tables: %w", err)
		}
		if !hasTable(tables, wt.table.Name) {
			drift = append(drift, where+": missing")
			continue
		}
		chains, err := c.ListChainsOfTableFamily(wt.table.Family)
		if err != nil {
			return nil, fmt.Errorf("verify: list chains: %w", err)
		}
		got := map[string]*nftables.Chain{}
		for _, ch := range chains {
			if ch.Table.Name == wt.table.Name {
				got[ch.Name] = ch
			}
		}
		ri := 0
		for j, wc := range wt.chains {
			pc := pt.Chains[j]
			cwhere := where + " chain " + wc.Name
			gc := got[wc.Name]
			delete(got, wc.Name)
			nrules := len(pc.Rules)
			wrules := wt.rules[ri : ri+nrules]
			ri += nrules
			if gc == nil {
				drift = append(drift, cwhere+": missing")
				continue
			}
			if d := chainDiff(wc, gc); d != "" {
				drift = append(drift, cwhere+": "+d)
			}
			rules, err := c.GetRules(wt.table, wc)
			if err != nil {
				return nil, fmt.Errorf("verify: %s: %w", cwhere, err)
			}
			drift = append(drift, rulesDiff(cwhere, wt.table.Family, pc.Rules, wrules, rules)...)
		}
		for name := range got {
			drift = append(drift, fmt.Sprintf("%s chain %s: not planned", where, name))
		}
	}
	return drift, nil
}

func hasTable(ts []*nftables.Table, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}

func chainDiff(want, got *nftables.Chain) string {
	eq := func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
	switch {
	case got.Hooknum == nil || *got.Hooknum != *want.Hooknum:
		return "hook differs"
	case got.Priority == nil || *got.Priority != *want.Priority:
		return "priority differs"
	case got.Type != want.Type:
		return fmt.Sprintf("type %s, want %s", got.Type, want.Type)
	case got.Policy == nil || !eq(*got.Policy, *want.Policy):
		return "policy differs"
	}
	return ""
}

func rulesDiff(where string, fam nftables.TableFamily, plan []Rule, want, got []*nftables.Rule) []string {
	var drift []string
	for k := 0; k < len(want) || k < len(got); k++ {
		switch {
		case k >= len(got):
			drift = append(drift, fmt.Sprintf("%s: rule %d missing: %s", where, k+1, plan[k]))
		case k >= len(want):
			drift = append(drift, fmt.Sprintf("%s: rule %d not planned", where, k+1))
		case !sameExprs(byte(fam), want[k].Exprs, got[k].Exprs):
			drift = append(drift, fmt.Sprintf("%s: rule %d differs, want: %s", where, k+1, plan[k]))
		}
	}
	return drift
}

// sameExprs compares expressions by their netlink encoding: what the kernel would be
// sent for each, which is what matters.
func sameExprs(fam byte, a, b []expr.Any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, err1 := expr.Marshal(fam, a[i])
		y, err2 := expr.Marshal(fam, b[i])
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}
