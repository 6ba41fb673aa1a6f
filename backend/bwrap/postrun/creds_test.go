package postrun

import (
	"slices"
	"strings"
	"testing"
)

// Credential and Redact, checked against git itself (gitList runs git config --list on
// the copy): every key kept, the credentials gone, everything else as it was.
func TestRedactCredentials(t *testing.T) {
	const in = `# actions/checkout's
[core]
	abbrev = 9 ; comment
	bare
[http "https://github.com/"]
	extraheader = AUTHORIZATION: basic SECRET-1
[http]
	extraheader =
	proxy = http://proxyuser:SECRET-2@proxy.example:3128
[remote "origin"]
	url = https://oauth2:SECRET-3@gitlab.example/x.git
	pushurl = https://SECRET-4@github.com/x.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "ssh"]
	url = ssh://git@github.com/x.git
	url2 = git@github.com:x.git
[url "https://u:SECRET-5@host.example/"]
	insteadOf = https://host.example/
[sendemail]
	smtppass = SECRET-6
[alias]
	q = "log \"--format=%s\"\t-1"
[include]
	path = ../inc.cfg
[branch.Main]
	remote = origin
`
	entries, err := ParseConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, ok := Credential(e); ok {
			found = append(found, CredentialName(e))
		}
	}
	want := []string{"http.https://github.com/.extraheader", "http.proxy", "remote.origin.url", "remote.origin.pushurl", "url.https://host.example/.insteadof", "sendemail.smtppass"}
	if !slices.Equal(found, want) {
		t.Errorf("credentials found %q, want %q", found, want)
	}
	out, err := Redact([]byte(in), entries)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "SECRET") {
		t.Errorf("the copy holds a credential:\n%s", out)
	}
	got, ok, err := gitList(t, out)
	if err != nil || !ok {
		t.Fatalf("git refuses the copy (%v):\n%s", err, out)
	}
	orig, _, _ := gitList(t, []byte(in))
	wantList := []string{}
	for _, kv := range orig {
		switch {
		case strings.HasPrefix(kv, "http.https://github.com/.extraheader="), strings.HasPrefix(kv, "sendemail.smtppass="):
			kv = kv[:strings.IndexByte(kv, '=')+1]
		case strings.Contains(kv, "SECRET-2@"):
			kv = "http.proxy=http://proxy.example:3128"
		case strings.Contains(kv, "SECRET-3@"):
			kv = "remote.origin.url=https://gitlab.example/x.git"
		case strings.Contains(kv, "SECRET-4@"):
			kv = "remote.origin.pushurl=https://github.com/x.git"
		case strings.Contains(kv, "SECRET-5@"):
			kv = "url.https://host.example/.insteadof=https://host.example/"
		}
		wantList = append(wantList, kv)
	}
	if !slices.Equal(got, wantList) {
		t.Errorf("git reads the copy as\n%q\nwant\n%q", got, wantList)
	}
	// Credentials in values only: the other lines, comments included, stay as written.
	const values = "# checkout's token, do not edit\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic SECRET-1 ; why\n[remote \"origin\"] # origin\n\turl = https://oauth2:SECRET-3@gitlab.example/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n; end\n"
	ve, err := ParseConfig([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	out, err = Redact([]byte(values), ve)
	wantCopy := "# checkout's token, do not edit\n[http \"https://github.com/\"]\n\textraheader = \"\"\n[remote \"origin\"] # origin\n\turl = \"https://gitlab.example/x.git\"\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n; end\n"
	if err != nil || string(out) != wantCopy {
		t.Errorf("values only: %v\n%s\nwant\n%s", err, out, wantCopy)
	}
	if got, ok, err := gitList(t, out); err != nil || !ok || len(got) != 3 {
		t.Errorf("git reads the values-only copy as %q (%v)", got, err)
	}
	// A config without credentials finds none.
	clean, _ := ParseConfig([]byte("[remote \"o\"]\n\turl = ssh://git@host/x\n[http]\n\textraheader =\n"))
	for _, e := range clean {
		if _, ok := Credential(e); ok {
			t.Errorf("%s counted as a credential", e.Name)
		}
	}
}
