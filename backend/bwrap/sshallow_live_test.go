package bwrap_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/crypto/ssh"
)

// TestSSHAgentAllowlist: the SSH world of TestSSHAgentFilter on tier allowlist, with the
// forge named allowed.test (a lab name whose DNS answer is the forge's address) and
// --ssh-host allowed.test. From a real sandbox as the unprivileged user: git ls-remote
// and git push to the forge by name work; prod by its own name (denied.test, not an SSH
// host) fails at the tier's DNS; the forge's name on prod's port 2222, the forge's
// address, a name the sandbox made up (ssh's HostName pointing at the forge's address,
// its host key trusted so the filter alone would sign), another allowed name's address
// (example.test) on port 22, and an HTTP request naming the forge in Host sent to the
// forge's address on port 22 are all refused; each connection, admitted or refused, is
// a line of the run's network log. Then the test build with the admission widened
// (BOX_UNSAFE_OFF=ssh-allowlist: any address on an SSH host's port) logs in through the
// made-up name (BREACH), so the refusal is the admission's doing. About 30 s.
func TestSSHAgentAllowlist(t *testing.T) {
	w, l, s := sshWorld(t, append(lab.Tools, "curl", "nsenter")...)
	const forgeName = "allowed.test" // lab.InternetNames: DNS answers lab.Internet
	// The user's known_hosts also knows the forge by that name.
	khPath := filepath.Join(w.home, ".ssh", "known_hosts")
	kh, _ := os.ReadFile(khPath)
	w.write(khPath, string(kh)+forgeName+" "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.forgeKey)))+"\n")
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "push.toml"),
		fmt.Sprintf("ssh = { keys = [%q] }\n", s.chosenFP))

	// Every ssh that must be refused trusts any host key: the network alone refuses it.
	loose := "ssh -F /run/box/ssh/config -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"
	script := fmt.Sprintf(`set -u
git ls-remote ssh://%[1]s@%[2]s%[3]s >/dev/null; echo "lsremote=$?"
cd /tmp && git init -q -b main r && cd r && git -c user.name=A -c user.email=a@example.org commit -q --allow-empty -m x
git push -q ssh://%[1]s@%[2]s%[3]s main; echo "push=$?"
%[4]s -p 2222 %[1]s@denied.test echo prod-in; echo "prod=$?"
%[4]s -p 2222 %[1]s@%[2]s echo port-in; echo "port=$?"
%[4]s %[1]s@%[5]s echo addr-in; echo "addr=$?"
%[4]s -o HostName=%[5]s -o HostKeyAlias=%[2]s %[1]s@madeup echo madeup-in; echo "madeup=$?"
%[4]s %[1]s@example.test echo other-in; echo "other=$?"
curl -sS --max-time 20 -H 'Host: %[2]s' http://%[5]s:22/ >/dev/null 2>&1; echo "host=$?"
`, testenv.UserName, forgeName, s.repo, loose, lab.Internet)
	r := w.pub().InLab(l, nil, "run", "-y", "-p", "push", "--network", "allowlist", "--allow", "example.test",
		"--ssh-host", forgeName, "--", "sh", "-c", script)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	for _, want := range []string{"lsremote=0", "push=0", "prod=255", "port=255", "addr=255", "madeup=255", "other=255"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, leak := range []string{"prod-in", "port-in", "addr-in", "madeup-in", "other-in", "host=0"} {
		if strings.Contains(r.Stdout, leak) {
			t.Errorf("%s: a connection the allowlist tier should have refused", leak)
		}
	}
	if out := mustUser(t, asUser(w, "git", "-C", s.repo, "log", "--format=%s", "main")); !strings.Contains(out, "x") {
		t.Errorf("the push did not land: %q", out)
	}
	m := regexp.MustCompile(`allowlist: run ([0-9a-f]{8}) allows 1 pattern\(s\) and SSH to allowed.test:22 by name`).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no start line naming the SSH host:\n%s", r.Stderr)
	}
	opLog, err := os.ReadFile(bwrap.NetworkLog(filepath.Join(w.home, ".local/share"), m[1]))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run log:\n%s", opLog)
	fa := lab.Internet.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`ssh allowed\.test 198\.1[89]\.[0-9.]+:22 admitted, dialled ` + regexp.QuoteMeta(fa) + `:22`),
		regexp.MustCompile(`refused-dns denied\.test`),
		regexp.MustCompile(`refused allowed\.test 198\.1[89]\.[0-9.]+:2222 port 2222 is not this SSH host's port`),
		regexp.MustCompile(`refused - ` + regexp.QuoteMeta(fa) + `:22 no name`),
		regexp.MustCompile(`refused example\.test 198\.1[89]\.[0-9.]+:22 port 22 not allowed for this name`),
		regexp.MustCompile(`refused allowed\.test ` + regexp.QuoteMeta(fa) + `:22 an SSH host is admitted only on the address the tier's DNS answered`),
	} {
		if !want.Match(opLog) {
			t.Errorf("run log lacks %s", want)
		}
	}
	if n := strings.Count(string(opLog), "refused - "+fa+":22 no name"); n < 2 {
		t.Errorf("the address and the made-up name: %d refusals by address, want 2", n)
	}

	// Widened: the made-up name reaches the forge, and the filter signs (its key is the
	// forge's): the refusal above is the admission's.
	w.withProtectionOff(t, bwrap.ProtSSHAllowlist)
	r = w.pub().InLab(l, nil, "run", "-y", "-p", "push", "--network", "allowlist", "--ssh-host", forgeName, "--", "sh", "-c",
		fmt.Sprintf("%s -o HostName=%s -o HostKeyAlias=%s %s@madeup echo madeup-in", loose, lab.Internet, forgeName, testenv.UserName))
	if !strings.Contains(r.Stdout, "madeup-in") {
		t.Errorf("with the admission widened, the made-up name should log in (BREACH):\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
