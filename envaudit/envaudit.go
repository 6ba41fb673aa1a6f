// Package envaudit builds a sandbox's environment from an allowlist and audits it
// before launch. The environment starts empty; only named variables enter. Values that
// look like secrets are flagged even when allowlisted: an allowlist is a list of names,
// and a name says nothing about what a value holds.
package envaudit

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/heavy-duty/box/internal/charclass"
)

// Locale are the locale categories: POSIX's (LC_ALL, LC_COLLATE, LC_CTYPE,
// LC_MESSAGES, LC_MONETARY, LC_NUMERIC, LC_TIME) and glibc's own. Only these enter: a
// pattern LC_* would also let in LC_DBPASS or a webhook in LC_HOOK.
var Locale = []string{"LC_ALL", "LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC", "LC_TIME",
	"LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE"}

// Base is the documented base allowlist: what terminals and locale-aware tools need.
// Everything else must be named by a profile or by --env. CI is no secret, and test
// runners, package managers and hook frameworks change behaviour on it (no watch mode,
// no prompts): without it a run in a CI job behaved unlike the job around it (field
// review, session 21).
var Base = append([]string{"TERM", "COLORTERM", "LANG", "LANGUAGE", "TZ", "NO_COLOR", "CI"}, Locale...)

// baseShape is what a base variable's value may be: a character set and a length. A
// terminal type, a locale or a time zone has a small shape; a value outside it (a URL,
// a token, a sentence) is flagged, whatever it holds.
type baseShape struct {
	chars *charclass.Class
	max   int
	what  string
}

var (
	localeShape = baseShape{charclass.New("A-Za-z0-9_.@-"), 64, "a locale name such as en_US.UTF-8"}
	baseShapes  = map[string]baseShape{
		"TERM":      {charclass.New("A-Za-z0-9_.+-"), 64, "a terminal type such as xterm-256color"},
		"COLORTERM": {charclass.New("A-Za-z0-9_.-"), 32, "a colour capability such as truecolor"},
		"LANG":      localeShape,
		"LANGUAGE":  {charclass.New("A-Za-z0-9_.@:-"), 128, "a list of locale names such as en_US:en"},
		// Olson names (Europe/Paris), POSIX rules (CET-1CEST,M3.5.0,M10.5.0/3) and
		// :/path forms; never "//" (a URL) or longer than any of those.
		"TZ":       {charclass.New("A-Za-z0-9_+,.:/<>-"), 48, "a time zone such as Europe/Paris"},
		"NO_COLOR": {charclass.New("A-Za-z0-9"), 8, "a flag such as 1"},
		"CI":       {charclass.New("A-Za-z0-9_-"), 16, "a flag such as true or a CI system's name"},
	}
)

func init() {
	for _, n := range Locale {
		baseShapes[n] = localeShape
	}
}

// checkShape flags a base variable's value outside its shape; "" when it fits (or the
// variable is not a base one).
func checkShape(name, value string) string {
	sh, ok := baseShapes[name]
	if !ok || value == "" {
		return ""
	}
	if len(value) > sh.max || !charclass.All(value, sh.chars) || strings.Contains(value, "//") || !fitsForm(name, value) {
		return "value does not look like " + sh.what + " (a base variable's value is checked against its shape)"
	}
	return ""
}

// isLocale reports whether s has a locale name's structure: C or POSIX, or
// language[_TERRITORY][.codeset][@modifier] (a token of the right characters,
// Xk9fQ2mZp7, is no locale). It is the regular expression
// ^(C|POSIX|[a-z]{2,3}(_([A-Z]{2}|[0-9]{3}))?)(\.[A-Za-z0-9-]{1,20})?(@[a-z0-9]{1,16})?$
// by hand (envaudit_test.go holds them to each other): compiling it cost every launch
// more than the rest of the audit.
func isLocale(s string) bool {
	head, rest := s, ""
	if i := strings.IndexAny(s, ".@"); i >= 0 {
		head, rest = s[:i], s[i:]
	}
	if !isLocaleHead(head) {
		return false
	}
	if r, ok := strings.CutPrefix(rest, "."); ok {
		codeset := r
		rest = ""
		if i := strings.IndexByte(r, '@'); i >= 0 {
			codeset, rest = r[:i], r[i:]
		}
		if len(codeset) < 1 || len(codeset) > 20 || !charclass.All(codeset, localeCodeset) {
			return false
		}
	}
	if rest == "" {
		return true
	}
	mod, ok := strings.CutPrefix(rest, "@")
	return ok && len(mod) >= 1 && len(mod) <= 16 && charclass.All(mod, localeModifier)
}

// isLocaleHead: C, POSIX, or language[_TERRITORY].
func isLocaleHead(h string) bool {
	if h == "C" || h == "POSIX" {
		return true
	}
	lang, terr, hasTerr := strings.Cut(h, "_")
	if len(lang) < 2 || len(lang) > 3 || !charclass.All(lang, localeLower) {
		return false
	}
	return !hasTerr || (len(terr) == 2 && charclass.All(terr, localeUpper)) || (len(terr) == 3 && charclass.All(terr, localeDigit))
}

var (
	localeLower    = charclass.New("a-z")
	localeUpper    = charclass.New("A-Z")
	localeDigit    = charclass.New("0-9")
	localeCodeset  = charclass.New("A-Za-z0-9-")
	localeModifier = charclass.New("a-z0-9")
)

// fitsForm checks the structure of the values that have one: a locale, a list of them.
func fitsForm(name, value string) bool {
	switch sh := baseShapes[name]; {
	case sh == localeShape:
		return isLocale(value)
	case name == "LANGUAGE":
		for _, l := range strings.Split(value, ":") {
			if l != "" && !isLocale(l) {
				return false
			}
		}
	}
	return true
}

// Var is one variable that will enter the sandbox, and why.
type Var struct {
	Name   string
	Value  string
	Origin string // "base", "profile", "--env" or "box" (set by box itself)
}

// Finding says why a variable looks like a secret.
type Finding struct {
	Name   string
	Reason string
}

// match reports whether name is allowed by pattern (NAME or PREFIX*).
func match(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// Allowlist is an ordered set of patterns with the origin each came from.
type Allowlist struct {
	patterns []string
	origins  []string
}

// Add appends patterns under an origin label.
func (a *Allowlist) Add(origin string, patterns ...string) {
	for _, p := range patterns {
		a.patterns = append(a.patterns, p)
		a.origins = append(a.origins, origin)
	}
}

// Filter keeps the variables of environ (KEY=VALUE strings) the allowlist names, then
// adds set (box's own values such as HOME and PATH, which win). The result is sorted by
// name. Malformed entries are dropped.
func (a *Allowlist) Filter(environ []string, set map[string]string) []Var {
	byName := map[string]Var{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, mine := set[k]; mine {
			continue
		}
		for i, p := range a.patterns {
			if match(p, k) {
				byName[k] = Var{Name: k, Value: v, Origin: a.origins[i]}
				break
			}
		}
	}
	for k, v := range set {
		byName[k] = Var{Name: k, Value: v, Origin: "box"}
	}
	out := make([]Var, 0, len(byName))
	for _, v := range byName {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Environ renders vars as KEY=VALUE for exec.Cmd.Env.
func Environ(vars []Var) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name + "=" + v.Value
	}
	return out
}

// Names returns the variable names, in order.
func Names(vars []Var) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name
	}
	return out
}

// tokenPrefixes are value prefixes of well-known credential formats.
var tokenPrefixes = []struct{ prefix, what string }{
	{"ghp_", "GitHub token"}, {"gho_", "GitHub OAuth token"}, {"ghu_", "GitHub token"},
	{"ghs_", "GitHub token"}, {"ghr_", "GitHub refresh token"}, {"github_pat_", "GitHub token"},
	{"glpat-", "GitLab token"}, {"sk-ant-", "Anthropic API key"}, {"sk-", "API secret key"},
	{"sk_live_", "Stripe key"}, {"rk_live_", "Stripe key"}, {"AKIA", "AWS access key"},
	{"ASIA", "AWS access key"}, {"xoxb-", "Slack token"}, {"xoxp-", "Slack token"},
	{"xoxa-", "Slack token"}, {"xoxs-", "Slack token"}, {"AIza", "Google API key"},
	{"ya29.", "Google OAuth token"}, {"npm_", "npm token"}, {"hf_", "Hugging Face token"},
	{"pypi-", "PyPI token"}, {"dop_v1_", "DigitalOcean token"}, {"tskey-", "Tailscale key"},
	{"AGE-SECRET-KEY-", "age secret key"},
}

// secretNameWords mark a variable name as secret-bearing.
var secretNameWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "PRIVATE_KEY", "ACCESS_KEY", "AUTH"}

// dropAuthor replaces each AUTHOR or AUTHORS that ends a word (before _ or the end)
// with "_", so the word cannot read as AUTH.
func dropAuthor(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "AUTHOR")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len("AUTHOR")
		if j < len(s) && s[j] == 'S' {
			j++
		}
		if j == len(s) || s[j] == '_' {
			b.WriteString(s[:i])
			b.WriteByte('_')
			s = s[min(j+1, len(s)):]
			continue
		}
		b.WriteString(s[:i+len("AUTHOR")])
		s = s[i+len("AUTHOR"):]
	}
}

// Check flags one variable, or returns "" when nothing looks secret.
func Check(name, value string) string {
	if r := checkShape(name, value); r != "" {
		return r
	}
	for _, t := range tokenPrefixes {
		if strings.HasPrefix(value, t.prefix) && len(value) >= len(t.prefix)+8 {
			return "value looks like a " + t.what + " (" + t.prefix + "...)"
		}
	}
	if strings.Contains(value, "-----BEGIN") && strings.Contains(value, "PRIVATE KEY") {
		return "value holds a PEM private key"
	}
	// AUTHOR is not AUTH: GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL are not secrets
	// (AUTHORIZATION and XAUTHORITY still are flagged).
	up := dropAuthor(strings.ToUpper(name))
	for _, w := range secretNameWords {
		if strings.Contains(up, w) && value != "" {
			return "name suggests a secret (" + w + ")"
		}
	}
	if urlCredentials(value) {
		return "value is a URL with credentials in it"
	}
	if highEntropy(value) && !(baseShapes[name] != (baseShape{}) && wordy(value)) {
		return "value is a long high-entropy string"
	}
	return ""
}

// wordy: every run of letters and digits is a word, a number or short (rxvt-unicode-
// 256color, America/Argentina/Buenos_Aires), as names are; a token's runs are long and
// mixed. A base variable's value that fits its shape and is wordy is not a token, however
// varied its letters.
func wordy(v string) bool {
	for _, run := range strings.FieldsFunc(v, func(r rune) bool { return !alnum[byte(r)] || r > 127 }) {
		if len(run) > 8 && !charclass.All(run, letters) && !charclass.All(run, digitsOnly) {
			return false
		}
	}
	return true
}

var (
	alnum      = charclass.New("A-Za-z0-9")
	letters    = charclass.New("A-Za-z")
	digitsOnly = charclass.New("0-9")
)

// Audit flags every variable that looks like a secret.
func Audit(vars []Var) []Finding {
	var out []Finding
	for _, v := range vars {
		if v.Origin == "box" {
			continue // set by box from non-secret facts (HOME, PATH, ...)
		}
		if r := Check(v.Name, v.Value); r != "" {
			out = append(out, Finding{Name: v.Name, Reason: r})
		}
	}
	return out
}

// urlCredentials is true for scheme://user:password@host... or a token as the user
// (https://ghp_...@github.com). Such values skip the entropy check (they hold ":/"), so
// without this a proxy or remote URL would carry its password past the audit unflagged.
func urlCredentials(v string) bool {
	_, rest, ok := strings.Cut(v, "://")
	if !ok {
		return false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return false
	}
	userinfo := rest[:at]
	if _, pass, ok := strings.Cut(userinfo, ":"); ok && pass != "" {
		return true
	}
	return Check("", userinfo) != ""
}

// highEntropy is true for a long token-like value: no spaces, at least 20 characters,
// and more than 3.5 bits per character (hex keys reach 4, base64 secrets about 5-6).
func highEntropy(v string) bool {
	// Lists (NO_PROXY=a,b,c) and sentences are varied but not tokens.
	if len(v) < 20 || strings.ContainsAny(v, " \t\n,") {
		return false
	}
	// Paths and path lists are long and varied but not secrets.
	if strings.HasPrefix(v, "/") || strings.Contains(v, ":/") {
		return false
	}
	counts := map[rune]int{}
	n := 0
	for _, r := range v {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h > 3.5
}

// Shorten renders a value for the report as a few leading characters and the length,
// never whole: a report ends up in terminals' scrollback and CI logs, and a secret the
// audit missed must not be printed there. Unflagged values show up to 6 characters (at
// most half the value), flagged ones 4 and only when the value is long.
func Shorten(value string, flagged bool) string {
	r := []rune(value)
	if len(r) == 0 {
		return `""`
	}
	k := min(6, len(r)/2)
	if flagged {
		k = 4
		if len(r) < 12 {
			k = 0
		}
	}
	return fmt.Sprintf("%q... (%d chars)", string(r[:k]), len(r))
}

// Report writes the pre-launch audit: every variable that enters, shortened, with
// flagged ones marked. It returns the number of findings.
func Report(w io.Writer, vars []Var, findings []Finding) int {
	flag := map[string]string{}
	for _, f := range findings {
		flag[f.Name] = f.Reason
	}
	width := 0
	for _, v := range vars {
		width = max(width, len(v.Name))
	}
	fmt.Fprintf(w, "box: %d environment variables enter the sandbox:\n", len(vars))
	for _, v := range vars {
		reason, bad := flag[v.Name]
		mark := "  "
		if bad {
			mark = "! "
		}
		val := Shorten(v.Value, bad)
		if v.Origin == "box" {
			val = fmt.Sprintf("%q", v.Value) // box's own values (HOME, PATH) in full
		}
		fmt.Fprintf(w, "  %s%-*s = %s  [%s]\n", mark, width, v.Name, val, v.Origin)
		if bad {
			fmt.Fprintf(w, "      %*s   ^ %s\n", width, "", reason)
		}
	}
	if len(findings) > 0 {
		fmt.Fprintf(w, "box: warning: %d value(s) look like secrets (marked !)\n", len(findings))
	}
	return len(findings)
}
