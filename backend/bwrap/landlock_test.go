package bwrap

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// The scope really refuses an abstract socket bound outside the domain, and the same
// connection from outside it succeeds: the refusal is the scope's.
func TestCheckAbstractScope(t *testing.T) {
	if LandlockABI() < landlockScopeABI {
		testenv.Skip(t, "Landlock ABI 6 (Linux 6.12+) is needed for the abstract-socket scope")
	}
	if err := CheckAbstractScope(); err != nil {
		t.Fatalf("CheckAbstractScope: %v", err)
	}
	name := "@box-test-" + strconv.Itoa(os.Getpid())
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("unix", name)
	if err != nil {
		t.Fatalf("unscoped connect: %v", err)
	}
	c.Close()
}

func TestAbstractLine(t *testing.T) {
	for _, c := range []struct {
		network Tier
		scoped  bool
		want    string
	}{
		{NetNone, false, ""},
		{NetFull, true, "abstract sockets: the host's are unreachable (Landlock scope)"},
		{NetFull, false, "abstract sockets: the host's are REACHABLE (no Landlock scope here; see the warning)"},
	} {
		p := &Plan{Spec: Spec{Network: c.network, ScopeAbstract: c.scoped}}
		if got := p.AbstractLine(); got != c.want {
			t.Errorf("%s scoped=%v: %q, want %q", c.network, c.scoped, got, c.want)
		}
	}
}
