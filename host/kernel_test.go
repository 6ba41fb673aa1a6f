package host

import (
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kernelConfig returns the running kernel's config, or "" where it is not exposed.
func kernelConfig() string {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return ""
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return ""
	}
	b, _ := io.ReadAll(z)
	return string(b)
}

func TestDetectBridgeMeta(t *testing.T) {
	requireKernel(t)
	guardRootRuleset(t)
	got, err := DetectBridgeMeta()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel supports meta ibrname/obrname: %v", got)
	// Cross-check with the kernel's own config where it is exposed.
	cfg := kernelConfig()
	switch {
	case strings.Contains(cfg, "CONFIG_NFT_BRIDGE_META=y"):
		if !got {
			t.Error("CONFIG_NFT_BRIDGE_META=y but DetectBridgeMeta says unsupported")
		}
	case strings.Contains(cfg, "# CONFIG_NFT_BRIDGE_META is not set"):
		if got {
			t.Error("CONFIG_NFT_BRIDGE_META is not set but DetectBridgeMeta says supported")
		}
	}
}

// The kernel reads the applied ruleset back exactly as the golden (and Plan) say;
// re-applying changes nothing; Remove leaves nothing; no other table is touched; a
// failing batch leaves the previous rules in place.
func TestKernelApply(t *testing.T) {
	requireKernel(t)
	guardRootRuleset(t)
	meta, err := DetectBridgeMeta()
	if err != nil {
		t.Fatal(err)
	}
	ns := newNS(t)
	nsRun(t, ns, "ip", "link", "add", "boxnet", "type", "bridge")
	// Someone else's table, which box must leave alone.
	nsRun(t, ns, "nft", "add table inet other; add chain inet other input { type filter hook input priority 0; }; add rule inet other input tcp dport 22 accept")
	other := nsRun(t, ns, "nft", "list", "table", "inet", "other")

	rs, err := Plan(testInputs(meta))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(goldenPath(meta))
	if err != nil {
		t.Fatal(err)
	}
	c := nftConn(t, ns)

	if err := Apply(c, rs); err != nil {
		t.Fatal(err)
	}
	first := listBox(t, ns)
	if diff := cmp.Diff(string(golden), first); diff != "" {
		t.Errorf("kernel listing vs %s (-golden +kernel):\n%s", goldenPath(meta), diff)
	}

	if drift, err := Verify(c, rs); err != nil || len(drift) != 0 {
		t.Errorf("Verify after Apply: %v %q", err, drift)
	}

	if err := Apply(c, rs); err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	if diff := cmp.Diff(first, listBox(t, ns)); diff != "" {
		t.Errorf("re-apply changed the ruleset (-first +second):\n%s", diff)
	}
	if n := strings.Count(nsRun(t, ns, "nft", "list", "tables"), "table"); n != 3 {
		t.Errorf("after two applies: %d tables, want 3 (bridge box, inet box, inet other)", n)
	}

	if !meta {
		// The bridge-meta variant fails on this kernel: the batch must fail whole, leaving
		// the applied rules exactly as they were.
		bad, _ := Plan(testInputs(true))
		if err := Apply(c, bad); err == nil {
			t.Error("applying meta ibrname on a kernel without bridge meta succeeded")
		} else {
			t.Logf("bridge-meta variant refused as expected: %v", err)
		}
		if diff := cmp.Diff(first, listBox(t, ns)); diff != "" {
			t.Errorf("a failed apply changed the ruleset (-before +after):\n%s", diff)
		}
	}

	// Verify notices a missing rule and a hand-added one.
	if err := Apply(c, rs.Without("host-to-box")); err != nil {
		t.Fatal(err)
	}
	nsRun(t, ns, "nft", "add rule bridge box forward ether type arp accept")
	drift, err := Verify(c, rs)
	if err != nil {
		t.Fatal(err)
	}
	wantDrift := []string{
		"table bridge box chain forward: rule 2 not planned", // meta: 1 planned rule
		`table inet box chain output: rule 3 missing: oifname "boxnet" drop`,
	}
	if !meta {
		wantDrift[0] = "table bridge box chain forward: rule 5 not planned"
	}
	if diff := cmp.Diff(wantDrift, drift); diff != "" {
		t.Errorf("Verify drift (-want +got):\n%s", diff)
	}

	if err := Remove(c); err != nil {
		t.Fatal(err)
	}
	if drift, _ := Verify(c, rs); len(drift) != 2 {
		t.Errorf("Verify after Remove: %q, want both tables missing", drift)
	}
	if got := nsRun(t, ns, "nft", "list", "tables"); strings.TrimSpace(got) != "table inet other" {
		t.Errorf("after Remove, tables:\n%s\nwant only inet other", got)
	}
	if err := Remove(c); err != nil {
		t.Errorf("Remove with nothing to remove: %v", err)
	}
	if got := nsRun(t, ns, "nft", "list", "table", "inet", "other"); got != other {
		t.Errorf("box changed a table it does not own:\nbefore:\n%s\nafter:\n%s", other, got)
	}
}

func TestApplyFirewall(t *testing.T) {
	requireKernel(t)
	guardRootRuleset(t)
	ns := newNS(t)
	c := nftConn(t, ns)
	if _, err := ApplyFirewall(c, "boxnet", "10.88.0.0/24"); err == nil {
		t.Error("ApplyFirewall accepted a subnet for the gateway address")
	}
	rs, err := ApplyFirewall(c, "boxnet", "10.88.0.1/24")
	if err != nil {
		t.Fatal(err)
	}
	if drift, err := Verify(c, rs); err != nil || len(drift) != 0 {
		t.Errorf("Verify after ApplyFirewall: %v %q", err, drift)
	}
	meta, err := DetectBridgeMeta()
	if err != nil {
		t.Fatal(err)
	}
	golden, _ := os.ReadFile(goldenPath(meta))
	if got := listBox(t, ns); got != string(golden) {
		t.Errorf("ApplyFirewall applied:\n%s\nwant the golden:\n%s", got, golden)
	}
}
