package envaudit

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func names(vars []Var) string { return strings.Join(Names(vars), ",") }

func TestFilterStartsEmpty(t *testing.T) {
	environ := []string{"HOME=/root", "PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=abc", "SSH_AUTH_SOCK=/run/x", "TERM=xterm"}
	var a Allowlist
	if got := a.Filter(environ, nil); len(got) != 0 {
		t.Errorf("empty allowlist let in %v", got)
	}
	a.Add("base", Base...)
	got := a.Filter(environ, nil)
	if names(got) != "TERM" {
		t.Errorf("base allowlist let in %v", Names(got))
	}
}

func TestFilterPatterns(t *testing.T) {
	environ := []string{
		"LC_ALL=C", "LC_TIME=en_GB.UTF-8", "LCX=no", "LC=no", "XLC_ALL=no",
		"TERM=xterm-256color", "TERMINAL=no", "TER=no", "MY_VAR=1", "MY_VAR_2=no",
		"GOPATH=/go", "GOFLAGS=no",
	}
	var a Allowlist
	a.Add("base", "TERM", "LC_*")
	a.Add("profile", "MY_VAR", "GOPATH")
	got := a.Filter(environ, nil)
	want := []Var{
		{"GOPATH", "/go", "profile"},
		{"LC_ALL", "C", "base"},
		{"LC_TIME", "en_GB.UTF-8", "base"},
		{"MY_VAR", "1", "profile"},
		{"TERM", "xterm-256color", "base"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestFilterOriginFirstMatch(t *testing.T) {
	var a Allowlist
	a.Add("base", "LC_*")
	a.Add("--env", "LC_ALL")
	got := a.Filter([]string{"LC_ALL=C"}, nil)
	if len(got) != 1 || got[0].Origin != "base" {
		t.Errorf("got %v", got)
	}
}

func TestFilterBoxWins(t *testing.T) {
	var a Allowlist
	a.Add("profile", "HOME", "PATH", "TERM")
	environ := []string{"HOME=/root", "PATH=/root/bin:/usr/bin", "TERM=xterm"}
	got := a.Filter(environ, map[string]string{"HOME": "/sandbox/home", "PATH": "/usr/bin:/bin", "BOX": "1"})
	want := []Var{
		{"BOX", "1", "box"},
		{"HOME", "/sandbox/home", "box"},
		{"PATH", "/usr/bin:/bin", "box"},
		{"TERM", "xterm", "profile"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// Box's values are set even when nothing in the allowlist names them.
	var empty Allowlist
	if got := empty.Filter(environ, map[string]string{"HOME": "/h"}); !reflect.DeepEqual(got, []Var{{"HOME", "/h", "box"}}) {
		t.Errorf("got %v", got)
	}
}

func TestFilterMalformedAndSorted(t *testing.T) {
	var a Allowlist
	a.Add("base", "*")
	environ := []string{"NOEQUALS", "=value", "", "Z=last", "A=first", "M=a=b=c", "EMPTY="}
	got := a.Filter(environ, nil)
	want := []Var{{"A", "first", "base"}, {"EMPTY", "", "base"}, {"M", "a=b=c", "base"}, {"Z", "last", "base"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if e := Environ(got); !reflect.DeepEqual(e, []string{"A=first", "EMPTY=", "M=a=b=c", "Z=last"}) {
		t.Errorf("Environ = %v", e)
	}
}

func TestFilterDuplicateLastWins(t *testing.T) {
	var a Allowlist
	a.Add("base", "TERM")
	got := a.Filter([]string{"TERM=a", "TERM=b"}, nil)
	if len(got) != 1 || got[0].Value != "b" {
		t.Errorf("got %v", got)
	}
}

// Planted secrets, each in a variable the allowlist let in.
var planted = map[string]string{
	"GH":        "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
	"GH_PAT":    "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
	"OPENAI":    "sk-" + "proj-Abc123Def456Ghi789Jkl012",
	"ANTHROPIC": "sk-ant-" + "api03-AbCdEfGhIjKlMnOpQrStUvWx-yz0123456789",
	"AWS_ID":    "AKIA" + "IOSFODNN7EXAMPLE",
	"SLACK":     "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	"GITLAB":    "glpat-" + "xxxxXXXXxxxxXXXXxxxx",
	"SSHKEY":    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n",
	"RSAKEY":    "-----BEGIN RSA PRIVATE KEY-----MIIEpAIBAAKCAQEA",
	"BLOB":      "q8Vz3Kd9LmP2xR7tY4wN6bH1jF5gC0sA+/eUiOkZ",
	"HEXKEY":    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	"HF":        "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz",
	"NPMRC":     "npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123",
	"TS":        "tskey-" + "auth-kAbCdEf1CNTRL-xyz",
	"AGE":       "AGE-SECRET-KEY-" + "1QQQQQQQQQQQQQQQQQQQQQQQQQQ",
	// By name, whatever the value.
	"MY_API_TOKEN":   "hunter2",
	"DB_PASSWORD":    "hunter2",
	"CLIENT_SECRET":  "abc",
	"OPENAI_API_KEY": "x",
	"HTTP_AUTH":      "basic",
	// AUTHOR is exempt from the AUTH word, AUTHORIZATION and AUTHORITY are not.
	"HTTP_AUTHORIZATION": "Bearer abc",
	"XAUTHORITY":         "/run/user/1000/xauth_AbCdEf",
	"GIT_AUTHOR_TOKEN":   "abc",
	// Credentials inside URLs (which skip the entropy check).
	"HTTPS_PROXY": "http://bob:s3cretPassw0rd@proxy.example:3128",
	"REMOTE":      "https://x-access-token:abcdefgh12345678@github.com/o/r.git",
	"CLONE_URL":   "https://ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5@github.com/o/r",
}

func TestAuditFlagsPlanted(t *testing.T) {
	var vars []Var
	for n, v := range planted {
		vars = append(vars, Var{Name: n, Value: v, Origin: "profile"})
	}
	flagged := map[string]string{}
	for _, f := range Audit(vars) {
		if f.Reason == "" {
			t.Errorf("%s: empty reason", f.Name)
		}
		flagged[f.Name] = f.Reason
	}
	for n := range planted {
		if _, ok := flagged[n]; !ok {
			t.Errorf("%s=%q not flagged", n, planted[n])
		}
	}
	// The reasons say what was recognized.
	for n, want := range map[string]string{
		"GH": "GitHub token", "GH_PAT": "GitHub token", "ANTHROPIC": "Anthropic API key", "OPENAI": "API secret key",
		"AWS_ID": "AWS access key", "SLACK": "Slack token", "GITLAB": "GitLab token", "SSHKEY": "PEM private key",
		"BLOB": "high-entropy", "MY_API_TOKEN": "TOKEN",
	} {
		if !strings.Contains(flagged[n], want) {
			t.Errorf("%s: reason %q, want it to mention %q", n, flagged[n], want)
		}
	}
}

func TestAuditOrdinary(t *testing.T) {
	ordinary := []Var{
		{"TERM", "xterm-256color", "base"},
		{"COLORTERM", "truecolor", "base"},
		{"LANG", "en_US.UTF-8", "base"},
		{"LANGUAGE", "en_US:en", "base"},
		{"LC_ALL", "C.UTF-8", "base"},
		{"TZ", "Europe/Paris", "base"},
		{"NO_COLOR", "1", "base"},
		{"EDITOR", "vim", "profile"},
		{"GOPATH", "/home/someone/go/pkg/mod/github.com/some-org/some-project", "profile"},
		{"MANPATH", "/usr/local/share/man:/usr/share/man:/opt/tools/share/man", "profile"},
		{"PROMPT_NOTE", "the quick brown fox jumps over the lazy dog, twice over", "profile"},
		{"PROJECT_URL", "https://example.com/some/long/path/to/a/page?with=query", "profile"},
		{"GIT_AUTHOR_NAME", "Jane Doe", "profile"},
		{"GIT_AUTHOR_EMAIL", "jane@example.com", "profile"},
		{"VERSION", "1.2.3-rc.4+build.5", "profile"},
		{"SKIP_TESTS", "sk-", "profile"},
		{"EMPTY_TOKEN", "", "profile"},
		{"CI", "true", "profile"},
		{"GIT_REMOTE", "ssh://git@github.com/o/r.git", "profile"},
		{"DOC_URL", "https://example.com/users/@someone/status/12345", "profile"},
		{"REPEATED", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "profile"},
	}
	for _, f := range Audit(ordinary) {
		t.Errorf("ordinary %s flagged: %s", f.Name, f.Reason)
	}
}

func TestAuditSkipsBox(t *testing.T) {
	vars := []Var{
		{"HOME", "/tmp/box-home-q8Vz3Kd9LmP2xR7tY4wN6bH1", "box"},
		{"BOX_TOKEN", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", "box"},
		{"LEAK", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", "--env"},
	}
	got := Audit(vars)
	if len(got) != 1 || got[0].Name != "LEAK" {
		t.Errorf("Audit = %v, want only LEAK", got)
	}
}

func TestCheckShortPrefixNotFlagged(t *testing.T) {
	// A bare prefix, or a prefix and a few characters, is not a token.
	for _, v := range []string{"ghp_", "sk-abc", "AKIA1234", "xoxb-1"} {
		if r := Check("X", v); r != "" {
			t.Errorf("Check(%q) = %q", v, r)
		}
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		v       string
		flagged bool
		want    string
	}{
		{"xterm", false, `"xt"... (5 chars)`},
		{"", false, `""`},
		{"C", false, `""... (1 chars)`},
		{"xterm-256color", false, `"xterm-"... (14 chars)`},
		{strings.Repeat("b", 49), false, `"bbbbbb"... (49 chars)`},
		{"ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", true, `"ghp_"... (40 chars)`},
		{"hunter2", true, `""... (7 chars)`},
		{"héllo wörld ünïcode ok", true, `"héll"... (22 chars)`},
	} {
		if got := Shorten(tc.v, tc.flagged); got != tc.want {
			t.Errorf("Shorten(%q, %v) = %s, want %s", tc.v, tc.flagged, got, tc.want)
		}
	}
}

func TestReportNeverPrintsSecrets(t *testing.T) {
	var a Allowlist
	a.Add("base", Base...)
	var environ []string
	var secretNames []string
	for n, v := range planted {
		environ = append(environ, n+"="+v)
		secretNames = append(secretNames, n)
	}
	a.Add("profile", secretNames...)
	environ = append(environ, "TERM=xterm-256color", "HOME=/root", "LANG=en_US.UTF-8")
	vars := a.Filter(environ, map[string]string{"HOME": "/home/box", "PATH": "/usr/bin:/bin"})
	findings := Audit(vars)

	var buf bytes.Buffer
	n := Report(&buf, vars, findings)
	out := buf.String()
	if n != len(findings) || n != len(planted) {
		t.Errorf("Report returned %d, %d findings, %d planted", n, len(findings), len(planted))
	}
	for name, v := range planted {
		if len(v) >= 8 && strings.Contains(out, v) {
			t.Errorf("the whole secret of %s is in the report:\n%s", name, out)
		}
		// Not even most of it.
		if len(v) >= 12 && strings.Contains(out, v[:len(v)/2]) {
			t.Errorf("half the secret of %s is in the report", name)
		}
	}
	if strings.Contains(out, "/root") {
		t.Error("the host HOME leaked past box's own value")
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "box: "+itoa(len(vars))+" environment variables enter the sandbox") {
		t.Errorf("header: %q", lines[0])
	}
	for _, v := range vars {
		var line string
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " !"), v.Name+" ") {
				line = l
			}
		}
		if line == "" {
			t.Errorf("%s missing from the report", v.Name)
			continue
		}
		_, bad := planted[v.Name]
		if marked := strings.HasPrefix(line, "  ! "); marked != bad {
			t.Errorf("%s: marked %v, flagged %v: %q", v.Name, marked, bad, line)
		}
		if !strings.HasSuffix(line, "["+v.Origin+"]") {
			t.Errorf("%s: origin missing: %q", v.Name, line)
		}
	}
	if !strings.Contains(out, `"xterm-"... (14 chars)`) || strings.Contains(out, "xterm-256color") || !strings.Contains(out, `"/home/box"`) {
		t.Errorf("ordinary values not shown:\n%s", out)
	}
	if !strings.Contains(out, "warning: "+itoa(len(planted))+" value(s) look like secrets") {
		t.Errorf("no warning line:\n%s", out)
	}
}

func TestReportClean(t *testing.T) {
	var buf bytes.Buffer
	vars := []Var{{"TERM", "xterm", "base"}}
	if n := Report(&buf, vars, Audit(vars)); n != 0 {
		t.Errorf("n = %d", n)
	}
	if strings.Contains(buf.String(), "!") || strings.Contains(buf.String(), "warning") {
		t.Errorf("clean report marks something:\n%s", buf.String())
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestBaseLocaleNamesOnly(t *testing.T) {
	var a Allowlist
	a.Add("base", Base...)
	environ := []string{"LC_ALL=C", "LC_CTYPE=en_US.UTF-8", "LC_PAPER=en_GB.UTF-8", "LC_IDENTIFICATION=C",
		"LC_DBPASS=hunter2", "LC_HOOK=https://hooks.example.com/T0/B0/x", "LC_=x", "LC_all=C"}
	got := names(a.Filter(environ, nil))
	if got != "LC_ALL,LC_CTYPE,LC_IDENTIFICATION,LC_PAPER" {
		t.Errorf("entered: %s", got)
	}
	for _, n := range []string{"LC_ALL", "LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC", "LC_TIME",
		"LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE"} {
		if len(a.Filter([]string{n + "=C"}, nil)) != 1 {
			t.Errorf("%s does not enter", n)
		}
	}
}

func TestBaseShapes(t *testing.T) {
	good := map[string][]string{
		"TERM":      {"xterm-256color", "screen.xterm-256color", "rxvt-unicode-256color", "st+x", "linux"},
		"COLORTERM": {"truecolor", "24bit"},
		"LANG":      {"C", "POSIX", "C.UTF-8", "C.utf8", "en_US.UTF-8", "de_DE@euro", "sr_RS.UTF-8@latin", "es_419.UTF-8", "ast_ES.UTF-8", "zh_CN.GB18030", "ca_ES.UTF-8@valencia"},
		"LC_TIME":   {"en_GB.UTF-8"},
		"LANGUAGE":  {"en_US:en", "fr:en_GB"},
		"TZ":        {"Europe/Paris", "America/Argentina/Buenos_Aires", "UTC", "Etc/GMT+3", ":/etc/localtime", "CET-1CEST,M3.5.0,M10.5.0/3", "<+03>-3"},
		"NO_COLOR":  {"1", "true"},
	}
	for n, vs := range good {
		for _, v := range vs {
			if r := Check(n, v); r != "" {
				t.Errorf("%s=%s flagged: %s", n, v, r)
			}
		}
	}
	bad := map[string][]string{
		"TERM":      {"xterm; curl x", "xterm 256", strings.Repeat("x", 65)},
		"COLORTERM": {"true color"},
		"LANG":      {"en_US.UTF-8/../../x", "hunter2!", "https://hooks.example.com", "Xk9fQ2mZp7LrT4vW8bN", "hunter2", "en_US.UTF-8.x"},
		"LC_CTYPE":  {"s3cr3tPassw0rd"},
		"LC_ALL":    {"C;rm -rf", "a b"},
		"LANGUAGE":  {"en US", "en:Xk9fQ2mZp7"},
		"TZ":        {"https://hooks.slack.com/services/T000/B000/XXXX", "//evil", "Europe/Paris?token=abc", "a b", strings.Repeat("A", 49)},
		"NO_COLOR":  {"yes please", "123456789"},
	}
	for n, vs := range bad {
		for _, v := range vs {
			if r := Check(n, v); !strings.Contains(r, "does not look like") {
				t.Errorf("%s=%q: %q, want its shape flagged", n, v, r)
			}
		}
	}
	// A token that happens to fit TERM's character set is still a token.
	if r := Check("TERM", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"); r == "" {
		t.Error("a high-entropy TERM passed")
	}
	if r := Check("LANG", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"); r == "" {
		t.Error("a GitHub token in LANG passed")
	}
	// The shape is the base variable's: a profile's own variable keeps the usual checks.
	if r := Check("PROJECT_URL", "https://example.com/x"); r != "" {
		t.Errorf("a profile variable was shape-checked: %q", r)
	}
}

// FuzzCheck: whatever the value, a flagged value's report line never holds it whole.
func FuzzCheck(f *testing.F) {
	for _, v := range planted {
		f.Add("X", v)
	}
	f.Add("TERM", "xterm-256color")
	f.Add("TZ", "https://hooks.slack.com/services/T000/B000/XXXX")
	f.Add("LC_ALL", "en_US.UTF-8")
	f.Add("LANG", "C")
	f.Fuzz(func(t *testing.T, name, value string) {
		r := Check(name, value)
		if Check(name, value) != r {
			t.Fatal("not deterministic")
		}
		s := Shorten(value, r != "")
		if r != "" && len(value) >= 5 && strings.Contains(s, value) {
			t.Fatalf("flagged value printed whole: %q -> %s", value, s)
		}
		// Unflagged values are shortened too: never whole once longer than one character.
		if len([]rune(value)) >= 2 && strings.Contains(Shorten(value, false), strconvQuote(value)) {
			t.Fatalf("unflagged value printed whole: %q", value)
		}
		var buf bytes.Buffer
		vars := []Var{{Name: "V", Value: value, Origin: "profile"}}
		Report(&buf, vars, []Finding{{Name: "V", Reason: "x"}})
		if len(value) >= 5 && strings.Contains(buf.String(), value) {
			t.Fatalf("flagged value in the report: %q", value)
		}
	})
}

// A comma-separated list is long and varied but is not a token.
func TestAuditListNotSecret(t *testing.T) {
	if r := Check("NO_PROXY", "localhost,127.0.0.1,.internal.example,10.0.0.0/8"); r != "" {
		t.Errorf("NO_PROXY flagged: %s", r)
	}
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// TestIsLocaleAgreesWithRegexp holds isLocale to the regular expression it replaces:
// every string of up to five bytes over an alphabet of the grammar's edges, and the
// length bounds of each part.
func TestIsLocaleAgreesWithRegexp(t *testing.T) {
	re := regexp.MustCompile(`^(C|POSIX|[a-z]{2,3}(_([A-Z]{2}|[0-9]{3}))?)(\.[A-Za-z0-9-]{1,20})?(@[a-z0-9]{1,16})?$`)
	check := func(s string) {
		if got, want := isLocale(s), re.MatchString(s); got != want {
			t.Errorf("isLocale(%q) = %v, the regexp says %v", s, got, want)
		}
	}
	alphabet := []string{"a", "C", "P", "U", "1", "_", ".", "@", "-", "é"}
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for _, a := range alphabet {
			walk(prefix+a, n-1)
		}
	}
	walk("", 5)
	rep := strings.Repeat
	for _, s := range []string{"C", "POSIX", "POSIXX", "CC", "c", "posix", "en", "eng", "engl", "en_US", "en_USA", "en_U", "en_419",
		"en_41", "en_4199", "en_", "_US", "en_US.UTF-8", "en_US.utf8@euro", "de_DE@euro", "C.UTF-8", "POSIX@x", "en.", "en@",
		"en.@x", "en.UTF-8@", "en..x", "en.a.b", "en@a@b", "en@a.b", "en.a@b.c", "Xk9fQ2mZp7", "en_us", "EN_US", "en_US.UTF_8",
		"en." + rep("a", 20), "en." + rep("a", 21), "en@" + rep("a", 16), "en@" + rep("a", 17), "en@A", "en.x\x00", "en\n",
		"C." + rep("-", 20) + "@" + rep("9", 16), "sr_RS@latin", "ca_ES.UTF-8@valencia", "en_US:fr", "en US"} {
		check(s)
	}
}

// CI enters as a base variable (field review, session 21): it is no secret, and test
// runners, package managers and pre-commit change behaviour on it (no watch mode, no
// prompts), so a run in a CI job behaved unlike the job around it. Its value is a
// short flag or a CI system's name; anything else is flagged.
func TestBaseCI(t *testing.T) {
	if !slices.Contains(Base, "CI") {
		t.Fatalf("CI is not in the base allowlist %v", Base)
	}
	for _, v := range []string{"true", "1", "woodpecker"} {
		if r := Check("CI", v); r != "" {
			t.Errorf("CI=%s flagged: %s", v, r)
		}
	}
	for _, v := range []string{"https://hooks.example.com/x", "true; curl x", strings.Repeat("a", 17)} {
		if r := Check("CI", v); !strings.Contains(r, "does not look like") {
			t.Errorf("CI=%q: %q, want its shape flagged", v, r)
		}
	}
}
