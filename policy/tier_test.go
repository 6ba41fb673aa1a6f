package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Every tier answers every question; a new tier must be added to this table.
func TestTierQuestions(t *testing.T) {
	type answers struct{ ownNetNS, sharesHost, offline, helper, proxied, resolver, vm bool }
	want := map[Tier]answers{
		NetNone:      {ownNetNS: true, offline: true, vm: true},
		NetAllowlist: {ownNetNS: true, proxied: true, resolver: true},
		NetInternet:  {ownNetNS: true, helper: true, resolver: true, vm: true},
		NetFull:      {sharesHost: true},
	}
	if len(want) != len(Tiers) {
		t.Fatalf("the table has %d tiers, Tiers %d", len(want), len(Tiers))
	}
	for _, tier := range Tiers {
		w, ok := want[tier]
		if !ok {
			t.Fatalf("tier %s: not in the table", tier)
		}
		got := answers{tier.OwnNetNS(), tier.SharesHostNet(), tier.Offline(), tier.NeedsHelper(), tier.Proxied(), tier.OwnResolver(), tier.VMCapable()}
		if got != w {
			t.Errorf("tier %s: got %+v, want %+v", tier, got, w)
		}
		if tier.Explain() == "" || !strings.HasPrefix(tier.Explain(), string(tier)+": ") {
			t.Errorf("tier %s: SANDBOX.md has no text for it", tier)
		}
		if !tier.Valid() {
			t.Errorf("tier %s: not valid", tier)
		}
		if p, err := ParseTier(string(tier)); err != nil || p != tier {
			t.Errorf("ParseTier(%q) = %q, %v", tier, p, err)
		}
	}
	// An unknown name answers no to everything a sandbox would act on.
	bad := Tier("lan")
	if bad.Valid() || bad.OwnNetNS() || bad.SharesHostNet() || bad.Offline() || bad.NeedsHelper() || bad.Proxied() || bad.OwnResolver() || bad.VMCapable() {
		t.Errorf("an unknown tier answers yes")
	}
}

// Within orders the tiers by reach: each within itself and every wider one, the
// allowlist never within internet (it may name private hosts), an unknown tier within
// nothing and nothing but none within it.
func TestTierWithin(t *testing.T) {
	within := map[Tier][]Tier{
		NetNone:      {NetNone, NetAllowlist, NetInternet, NetFull, "lan"},
		NetAllowlist: {NetAllowlist, NetFull},
		NetInternet:  {NetInternet, NetFull},
		NetFull:      {NetFull},
		"lan":        nil,
	}
	for tier, wider := range within {
		for _, u := range append(slices.Clone(Tiers), "lan") {
			if got, want := tier.Within(u), slices.Contains(wider, u); got != want {
				t.Errorf("%s within %s: got %v, want %v", tier, u, got, want)
			}
		}
	}
	for _, tier := range Tiers {
		if _, ok := within[tier]; !ok {
			t.Errorf("tier %s: not in the table", tier)
		}
	}
}

// The lists help and hints word a feature's tiers by are the tiers answering its
// question, in Tiers' order.
func TestTierListWhere(t *testing.T) {
	for _, c := range []struct {
		q          func(Tier) bool
		conj, want string
	}{
		{Tier.Valid, "or", "none, allowlist, internet or full"},
		{Tier.OwnNetNS, "or", "none, allowlist or internet"},
		{Tier.OwnNetNS, "", "none, allowlist, internet"},
		{Tier.VMCapable, "and", "none and internet"},
		{Tier.SharesHostNet, "or", "full"},
		{func(Tier) bool { return false }, "or", ""},
	} {
		if got := TierListWhere(c.q, c.conj); got != c.want {
			t.Errorf("TierListWhere(..., %q) = %q, want %q", c.conj, got, c.want)
		}
	}
	if TierList("or") != TierListWhere(Tier.Valid, "or") {
		t.Errorf("TierList is not every tier")
	}
}

func TestParseTier(t *testing.T) {
	for _, s := range []string{"", "lan", "None", " none"} {
		_, err := ParseTier(s)
		want := `network "` + s + `": want one of none, allowlist, internet, full`
		if err == nil || err.Error() != want {
			t.Errorf("ParseTier(%q) = %v, want %s", s, err, want)
		}
	}
	for name, want := range map[string][]string{"nonee": {"none"}, "intranet": {"internet"}, "ful": {"full"}, "lan": nil, "": nil} {
		_, err := ParseTier(name)
		var te *TierError
		if !errors.As(err, &te) || !slices.Equal(te.Closest(), want) {
			t.Errorf("ParseTier(%q) = %v: closest %v, want %v", name, err, te, want)
		}
	}
	if got := TierList("or"); got != "none, allowlist, internet or full" {
		t.Errorf("TierList = %q", got)
	}
	if got := TierNames(); !slices.Equal(got, []string{"none", "allowlist", "internet", "full"}) {
		t.Errorf("TierNames = %q", got)
	}
}
