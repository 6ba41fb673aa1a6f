package bwrap_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
)

// TestSSHAgentDrill: box drill of a sandbox with box's filtering agent (the ssh lab of
// TestSSHAgentFilter, tier full) passes the ssh rows: the key files invisible, the
// host's agent unreachable by path, abstract name and inherited fd, no signature for a
// session bound to a host key no allowed host has, nor for a forwarded one. The same
// drill of the test build with the filter (ssh-agent), the unix-socket mediation
// (sockets), the abstract scope (abstract) and the fd closing (fds) off, and a profile
// mounting ~/.ssh, reports every one of those rows BREACH: each row can fail. Two
// drills of the ssh group only (--group ssh): the other groups' ~170 rows are proven by
// the drill's own tests, and cost minutes here. ssh:huge-request (a 1 MiB request, past
// the filter's 256 KiB bound) passes, and reports BREACH with the bound lifted
// (ssh-agent-size).
func TestSSHAgentDrill(t *testing.T) {
	w, l, s := sshWorld(t)
	prof := fmt.Sprintf("network = \"full\"\nssh = { hosts = [%q], keys = [%q] }\n", forgeHost, s.chosenFP)
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "push.toml"), prof)
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "leaky.toml"), prof+"[[mounts]]\npath = \"~/.ssh\"\n")
	rows := []string{drill.SSHKeyFileID, drill.SSHAgentPathID, drill.SSHAgentAbsID, drill.SSHAgentFDID, drill.SSHSignHostID, drill.SSHSignForwardID}

	r := w.drill(l, "-p", "push", "--group", "ssh")
	for _, id := range append(rows, drill.SSHHugeID) {
		r.want(t, id, drill.Pass)
		t.Logf("%s: %s", id, r.rows[id].Observed)
	}
	// Refused for the rule each row is about (the filter's log, read inside, says why).
	for id, why := range map[string]string{drill.SSHSignHostID: "not one of an allowed host's", drill.SSHSignForwardID: "forwarded connection"} {
		if !strings.Contains(r.rows[id].Observed, why) {
			t.Errorf("%s: %q does not give the reason %q", id, r.rows[id].Observed, why)
		}
	}
	if t.Failed() {
		t.Logf("drill:\n%s\nstderr:\n%s", r.table(), r.stderr)
	}

	// The filter's bound on a request's length lifted (the filter itself on: with it off,
	// the relay reaches OpenSSH's agent, which has its own).
	size := *w
	size.withProtectionOff(t, bwrap.ProtSSHAgentSize)
	r = size.drill(l, "-p", "push", "--group", "ssh")
	r.want(t, drill.SSHHugeID, drill.Breach)
	t.Logf("%s, off: %s", drill.SSHHugeID, r.rows[drill.SSHHugeID].Observed)

	w.withProtectionOff(t, "ssh-agent,sockets,abstract,fds")
	r = w.drill(l, "-p", "leaky", "--group", "ssh")
	for _, id := range rows {
		r.want(t, id, drill.Breach)
		t.Logf("%s, off: %s", id, r.rows[id].Observed)
	}
	if t.Failed() {
		t.Logf("drill, protections off:\n%s\nstderr:\n%s", r.table(), r.stderr)
	}
}
