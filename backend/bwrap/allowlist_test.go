package bwrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent's copy of the log is created fresh in the hostile instance directory: a
// planted link (to an operator file) is replaced, never written through, and a directory
// that is itself a link is refused.
func TestCreateInInstance(t *testing.T) {
	dir := t.TempDir()
	claude := filepath.Join(dir, ".claude")
	os.Mkdir(claude, 0o700)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("operator data\n"), 0o600)
	os.Symlink(victim, filepath.Join(claude, RefusalsFile))
	f, err := createInInstance(claude, RefusalsFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("line\n")
	f.Close()
	if b, _ := os.ReadFile(victim); string(b) != "operator data\n" {
		t.Errorf("written through the planted link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(claude, RefusalsFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("not a fresh regular file: %v %v", fi, err)
	}
	link := filepath.Join(dir, "linked")
	os.Symlink(claude, link)
	if _, err := createInInstance(link, RefusalsFile); err == nil {
		t.Errorf("created through a directory link")
	}
}

// SANDBOX.md tells the agent what the allowlist allows, where refusals are written and
// how to ask for more.
func TestSandboxMDAllowlist(t *testing.T) {
	md := SandboxMD(Policy{Profile: "p", Template: "t", Network: NetAllowlist, Workdir: "/w", StateDir: ".claude",
		Allow: []string{"github.com", "*.githubusercontent.com", "api.anthropic.com:443"}, RunID: "0123abcd"})
	for _, want := range []string{"allowlist: only the host names below", "`github.com`, `*.githubusercontent.com`, `api.anthropic.com:443`",
		"~/.claude/" + RefusalsFile, "box allow --run 0123abcd NAME"} {
		if !strings.Contains(md, want) {
			t.Errorf("SANDBOX.md lacks %q:\n%s", want, md)
		}
	}
	if md := SandboxMD(Policy{Network: NetAllowlist}); !strings.Contains(md, "Allowed: nothing.") {
		t.Errorf("empty allowlist not said:\n%s", md)
	}
	if md := SandboxMD(Policy{Network: NetInternet}); strings.Contains(md, RefusalsFile) {
		t.Errorf("tier internet names the allowlist's file")
	}
}

// ValidRunID takes what NewRunID makes and nothing that could name another path.
func TestValidRunID(t *testing.T) {
	for range 16 {
		if id := NewRunID(); !ValidRunID(id) {
			t.Errorf("ValidRunID(NewRunID() = %q) = false", id)
		}
	}
	for _, bad := range []string{"", "3f9c01a", "3f9c01aa0", "3F9C01AA", "../../x", "3f9c01ag", "3f9c/1aa"} {
		if ValidRunID(bad) {
			t.Errorf("ValidRunID(%q) = true", bad)
		}
	}
}

// A name the operator allowed while the run ran (box allow) is allowed: the end-of-run
// advice said "to allow in the next run: --allow registry.npmjs.org" as though it were
// still refused, and was silent on a live allow no built-in list holds (field review,
// session 21). It now says which names box allow let in, that this lasts the run, and
// the entry that keeps it (the operator's own words, so offered whatever list holds it).
func TestAllowAdviceLive(t *testing.T) {
	for _, c := range []struct {
		refused, live []string
		want          string
	}{
		{[]string{"registry.npmjs.org"}, []string{"registry.npmjs.org"}, "allowed during this run by box allow, for this run only: registry.npmjs.org; to allow from the start of the next run: --allow registry.npmjs.org, or allow = [...] in the profile"},
		{[]string{"api.example.org", "exfil.attacker.example", "github.com"}, []string{"*.example.org"}, "to allow in the next run: --allow github.com (or the built-in list @github), or allow = [...] in the profile; 1 refused name(s) no built-in list holds: the sandbox chose them, read the log before you allow any; allowed during this run by box allow, for this run only: *.example.org; to allow from the start of the next run: --allow '*.example.org', or allow = [...] in the profile"},
		{nil, []string{"pypi.org:443", "files.pythonhosted.org:443"}, "allowed during this run by box allow, for this run only: pypi.org:443, files.pythonhosted.org:443; to allow from the start of the next run: --allow pypi.org:443 --allow files.pythonhosted.org:443, or allow = [...] in the profile"},
	} {
		if got := allowAdvice(c.refused, c.live); got != c.want {
			t.Errorf("allowAdvice(%q, %q) =\n%q, want\n%q", c.refused, c.live, got, c.want)
		}
	}
}

// The end-of-run advice (field test, session 19): the refused host names as --allow
// entries, the built-in list that holds one, never an address or a single label.
func TestAllowAdvice(t *testing.T) {
	for _, c := range []struct {
		refused []string
		want    string
	}{
		{[]string{"registry.npmjs.org"}, "to allow in the next run: --allow registry.npmjs.org (or the built-in list @npm), or allow = [...] in the profile"},
		{[]string{"objects.githubusercontent.com", "example.org"}, "to allow in the next run: --allow objects.githubusercontent.com (or the built-in list @github), or allow = [...] in the profile; 1 refused name(s) no built-in list holds: the sandbox chose them, read the log before you allow any"},
		// The names are the sandbox's (hostile review, session 19): one no list holds is
		// never offered as a flag, however often it was looked up.
		{[]string{"registry-npmjs.org-mirror.attacker.example", "registry.npmjs.org"}, "to allow in the next run: --allow registry.npmjs.org (or the built-in list @npm), or allow = [...] in the profile; 1 refused name(s) no built-in list holds: the sandbox chose them, read the log before you allow any"},
		{[]string{"exfil.attacker.example"}, "1 refused name(s) no built-in list holds: the sandbox chose them, read the log before you allow any"},
		{[]string{"203.0.113.10:80", "box"}, ""},
		{[]string{"registry.npmjs.org", "github.com"}, "to allow in the next run: --allow registry.npmjs.org --allow github.com (or the built-in lists @npm, @github), or allow = [...] in the profile"},
		{nil, ""},
	} {
		if got := allowAdvice(c.refused, nil); got != c.want {
			t.Errorf("allowAdvice(%q) = %q, want %q", c.refused, got, c.want)
		}
	}
}
