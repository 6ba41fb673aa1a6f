package drill

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDNSQuery(t *testing.T) {
	q := DNSQuery(0x4242, "drill-ab12cd-b")
	want := append([]byte{0x42, 0x42, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 14}, "drill-ab12cd-b"...)
	want = append(want, 0, 0, 1, 0, 1)
	if !bytes.Equal(q, want) {
		t.Fatalf("query % x\nwant  % x", q, want)
	}
	// A response: QR set, NXDOMAIN, no answers; then one with an answer.
	resp := append([]byte{0x42, 0x42, 0x81, 0x83, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:]...)
	if n, rcode, ok := DNSAnswers(resp, 0x4242); !ok || n != 0 || rcode != 3 {
		t.Errorf("NXDOMAIN: %d %d %t", n, rcode, ok)
	}
	resp[7] = 1
	resp[3] = 0x80
	if n, _, ok := DNSAnswers(resp, 0x4242); !ok || n != 1 {
		t.Errorf("answer: %d %t", n, ok)
	}
	if _, _, ok := DNSAnswers(resp, 0x4343); ok {
		t.Error("another query's answer was accepted")
	}
	if _, _, ok := DNSAnswers(q, 0x4242); ok {
		t.Error("the query itself (QR unset) was accepted as an answer")
	}
}

// A service on the gateway's port 53 is the DNS carve-out: reachable is a PASS (and
// unreachable a FAIL), never the BREACH a host service on another port is.
func TestGatewayCarveOut(t *testing.T) {
	for _, c := range []struct {
		port int
		seen bool
		want Status
	}{
		{53, true, Pass}, {53, false, Fail}, {22, true, Breach}, {22, false, Pass}, {8080, true, Breach},
	} {
		p := gatewayProbe("10.88.0.1", c.port, nil)
		if r := p.judge(c.seen, "detail", nil); r.Status != c.want {
			t.Errorf("gateway port %d seen=%v: %s, want %s (%s)", c.port, c.seen, r.Status, c.want, r.Probe)
		}
	}
}

// The ARP claim row reads the host's /proc/net/arp: each entry's address, MAC and
// device; a table it cannot read is an error (the row cannot judge), never "no entry".
func TestARPEntries(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "arp")
	table := "IP address       HW type     Flags       HW address            Mask     Device\n" +
		"10.88.0.3        0x1         0x2         10:66:6A:54:59:61     *        boxnet\n" +
		"192.168.77.1     0x1         0x2         aa:bb:cc:dd:ee:ff     *        eth0\n"
	if err := os.WriteFile(p, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ARPEntries(p)
	want := []ARPEntry{{"10.88.0.3", "10:66:6a:54:59:61", "boxnet"}, {"192.168.77.1", "aa:bb:cc:dd:ee:ff", "eth0"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ARPEntries = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ARPEntries(filepath.Join(dir, "missing")); err == nil {
		t.Error("an unreadable table: no error")
	}
}

// The ARP claim row passes only when the claim was made and held off: the host's entry
// for B's address named B's MAC before it, A's request from B's address went unanswered,
// and the entry still names B. A host with no entry at all (the row that passed in CI
// with "none") or a try A's own traffic answered is an ERROR: the probe did not test.
func TestClaimJudge(t *testing.T) {
	const macA, macB = "10:66:6a:00:00:0a", "10:66:6a:00:00:0b"
	base := claim{ipB: "10.88.0.45", macA: macA, macB: macB, a: "drill-x-a", b: "drill-x-b", before: macB, added: true}
	dropped := claimTry{gwEntry: "10.88.0.1 INCOMPLETE", host: macB}
	for _, c := range []struct {
		name string
		mod  func(*claim)
		want Status
	}{
		{"held off", func(cl *claim) { cl.tries = []claimTry{dropped, dropped, dropped} }, Pass},
		{"held off, FAILED", func(cl *claim) { cl.tries = []claimTry{{gwEntry: "10.88.0.1 FAILED", host: macB}} }, Pass},
		{"claimed", func(cl *claim) {
			cl.tries = []claimTry{{gwEntry: "10.88.0.1 lladdr 10:66:6a:00:00:01 REACHABLE", host: macA}}
		}, Breach},
		{"claimed on the last try", func(cl *claim) { cl.tries = []claimTry{dropped, dropped, {host: macA}} }, Breach},
		{"no entry before the claim", func(cl *claim) { cl.before = "none"; cl.tries = nil }, Error},
		{"a stale box's MAC before the claim", func(cl *claim) { cl.before = "10:66:6a:00:00:99"; cl.tries = nil }, Error},
		{"the address not on A", func(cl *claim) { cl.added = false; cl.tries = nil }, Error},
		{"the entry gone after the claim", func(cl *claim) {
			cl.tries = []claimTry{{gwEntry: "10.88.0.1 INCOMPLETE", host: "none"}, {gwEntry: "10.88.0.1 FAILED", host: "none"}}
		}, Error},
		{"A's requests answered (its own address raced the claim)", func(cl *claim) {
			cl.tries = []claimTry{{gwEntry: "10.88.0.1 lladdr 10:66:6a:00:00:01 REACHABLE", host: macB}}
		}, Error},
		{"A never asked", func(cl *claim) { cl.tries = []claimTry{{gwEntry: "", host: macB}} }, Error},
		{"no try", func(cl *claim) { cl.tries = nil }, Error},
	} {
		cl := base
		c.mod(&cl)
		p := vmProbe{id: "sibling:arp-claim", want: Blocked}
		seen, detail, err := cl.judge()
		if r := p.judge(seen, detail, err); r.Status != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, r.Status, r.Observed, c.want)
		}
	}
}
