package bwrap_test

// The allowlist tier through the CLI, for real: box run --network allowlist as the
// unprivileged user in the lab's host namespace, with curl and git over HTTPS inside;
// refusals in the run log, in the sandbox's ~/.claude and on stderr; a name allowed live
// with box allow while the sandbox waits.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxAllowlistTier(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "curl", "git", "nsenter") {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	l := lab.New(t)
	if err := l.GitRepo(context.Background(), "repo"); err != nil {
		t.Fatal(err)
	}
	// The lab's CA, where the sandbox sees it: in the working directory.
	pem, err := os.ReadFile(l.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(w.proj, "ca.pem")
	w.write(ca, string(pem))
	// Each step prints "N OK body" or "N FAIL"; the sandbox then waits (for a file the
	// test writes in the working directory) until the operator has allowed denied.test.
	steps := []struct {
		name, cmd string
		reach     bool
	}{
		{"curl allowed https", "curl -sS --max-time 20 --cacert " + ca + " https://allowed.test/", true},
		{"curl allowed http", "curl -sS --max-time 20 http://allowed.test/", true},
		{"git allowed https", "git clone -q https://allowed.test/repo.git /tmp/r1 && cat /tmp/r1/README", true},
		{"curl denied", "curl -sS --max-time 20 --cacert " + ca + " https://denied.test/", false},
		{"git denied", "git clone -q https://denied.test/repo.git /tmp/r2", false},
		{"curl by address", "curl -sS --max-time 20 http://" + lab.Internet.String() + "/", false},
		{"curl by address, allowed Host", "curl -sS --max-time 20 -H 'Host: allowed.test' http://" + lab.Internet.String() + "/", true},
		{"rebinding to the LAN", "curl -sS --max-time 20 http://" + lab.LANName + "/", false},
		{"rebinding to metadata", "curl -sS --max-time 20 http://" + lab.MetadataName + "/", false},
	}
	var script strings.Builder
	script.WriteString("export GIT_SSL_CAINFO=" + ca + " GIT_TERMINAL_PROMPT=0\n")
	for i, s := range steps {
		fmt.Fprintf(&script, "if out=$(%s 2>&1); then echo \"%d OK $out\"; else echo \"%d FAIL $out\"; fi\n", s.cmd, i, i)
	}
	script.WriteString("grep -c " + bwrap.RefusalsFile + " ~/.claude/SANDBOX.md | sed 's/^/sandbox-md /'\n")
	script.WriteString("cp ~/.claude/" + bwrap.RefusalsFile + " ./inside-before.log\n")
	script.WriteString("touch ready; while [ ! -e allowed ]; do sleep 0.05; done\n")
	fmt.Fprintf(&script, "if out=$(curl -sS --max-time 20 --cacert %s https://denied.test/ 2>&1); then echo \"live OK $out\"; else echo \"live FAIL $out\"; fi\n", ca)
	script.WriteString("cp ~/.claude/" + bwrap.RefusalsFile + " ./inside-after.log\n")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{w.box, "run", "-y", "--network", "allowlist", "--allow", "allowed.test",
		"--allow", lab.LANName, "--allow", lab.MetadataName, "--", "sh", "-c", script.String()}
	c := l.UserCommand(ctx, w.uid, w.gid, args...)
	c.Dir, c.Env = w.proj, w.env
	stdout, _ := c.StdoutPipe()
	stderrR, stderrW := io.Pipe()
	c.Stderr = stderrW
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	runID := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`allowlist: run ([0-9a-f]{8}) allows`)
		s := bufio.NewScanner(stderrR)
		for s.Scan() {
			errText.WriteString(s.Text() + "\n")
			if m := re.FindStringSubmatch(s.Text()); m != nil {
				runID <- m[1]
			}
		}
		close(runID)
	}()
	outc := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stdout); outc <- string(b) }()

	id, ok := <-runID
	if !ok {
		c.Wait()
		t.Fatalf("box run printed no run id:\n%s", errText.String())
	}
	// Wait for the sandbox to reach its pause (a condition, not a time).
	for {
		if _, err := os.Stat(filepath.Join(w.proj, "ready")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sandbox never got ready:\n%s", errText.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	allow := l.UserCommand(ctx, w.uid, w.gid, w.box, "allow", "--run", id, "denied.test")
	allow.Dir, allow.Env = w.proj, w.env
	if out, err := allow.CombinedOutput(); err != nil || !strings.Contains(string(out), "allowed denied.test") {
		t.Errorf("box allow: %v: %s", err, out)
	}
	w.write(filepath.Join(w.proj, "allowed"), "")
	out := <-outc
	err = c.Wait()
	stderrW.Close()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errText.String())
	if err != nil {
		t.Fatalf("box run: %v", err)
	}
	for i, s := range steps {
		ok := strings.Contains(out, fmt.Sprintf("%d OK", i))
		if ok != s.reach {
			t.Errorf("%s: reached=%v, want %v", s.name, ok, s.reach)
		}
	}
	for _, want := range []string{"0 OK " + lab.InternetBody, "2 OK " + lab.RepoBody, "live OK " + lab.InternetBody, "sandbox-md 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, secret := range []string{lab.LANBody, lab.MetadataBody} {
		if strings.Contains(out, strings.TrimSpace(secret)) {
			t.Errorf("BREACH: %q read", secret)
		}
	}

	// The operator's log: every refusal with its name, address and port, and the live
	// change; the agent's copy inside says the same.
	opLog, err := os.ReadFile(bwrap.NetworkLog(filepath.Join(w.home, ".local/share"), id))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run log:\n%s", opLog)
	for _, want := range []string{
		"refused-dns denied.test - not in the allowlist",
		"refused - " + lab.Internet.String() + ":80 no name",
		"refused " + lab.LANName + " 198.18.", "resolves to a blocked address: " + lab.LANHost.String(),
		"refused " + lab.MetadataName + " 198.18.", "resolves to a blocked address: " + lab.Metadata.String(),
		"allowed denied.test - by the operator, live",
	} {
		if !strings.Contains(string(opLog), want) {
			t.Errorf("run log lacks %q", want)
		}
	}
	inside, _ := os.ReadFile(filepath.Join(w.proj, "inside-after.log"))
	if !strings.Contains(string(inside), "refused-dns denied.test") || !strings.Contains(string(inside), "allowed denied.test") {
		t.Errorf("the sandbox's copy of the log:\n%s", inside)
	}
	if !strings.Contains(errText.String(), "box: allowlist: refused ") || !strings.Contains(errText.String(), "denied.test (") {
		t.Errorf("no refusal summary on stderr")
	}
	// The end-of-run advice says what box allow let in, for this run only, and counts
	// only the names still refused (field review, session 21: it counted denied.test among
	// them, as though still refused).
	for _, want := range []string{
		"box: allowlist: 2 refused name(s) no built-in list holds",
		"allowed during this run by box allow, for this run only: denied.test; to allow from the start of the next run: --allow denied.test, or allow = [...] in the profile",
	} {
		if !strings.Contains(errText.String(), want) {
			t.Errorf("the end-of-run advice lacks %q", want)
		}
	}
	// The control socket is gone with the run.
	if ids := bwrap.RunningAllowlists("", filepath.Join(w.home, ".local/share")); len(ids) != 0 {
		t.Errorf("control sockets left: %v", ids)
	}
}

// A persistent bwrap box on tier allowlist: --allow on box exec allows a name for that
// launch only, through the same proxy as box run; without it the name is refused.
func TestBwrapBoxAllowlist(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "curl", "nsenter") {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	l := lab.New(t)
	run := func(args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := l.UserCommand(ctx, w.uid, w.gid, append([]string{w.box}, args...)...)
		c.Dir, c.Env = w.proj, w.env
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	if code, out := run("new", "--backend", "bwrap", "--name", "agentnet", "--network", "allowlist"); code != 0 {
		t.Fatalf("box new: exit %d\n%s", code, out)
	}
	fetch := []string{"--", "sh", "-c", "curl -sS --max-time 20 http://allowed.test/ && echo FETCHED"}
	code, out := run(append([]string{"exec", "-y", "--allow", "allowed.test", "agentnet"}, fetch...)...)
	if code != 0 || !strings.Contains(out, "FETCHED") {
		t.Errorf("--allow allowed.test: exit %d\n%s", code, out)
	}
	code, out = run(append([]string{"exec", "-y", "agentnet"}, fetch...)...)
	if strings.Contains(out, "FETCHED") || !strings.Contains(out, "allowed.test") {
		t.Errorf("without --allow the name was reached, or the refusal not named: exit %d\n%s", code, out)
	}
}
