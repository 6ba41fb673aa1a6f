package postrun

import (
	"fmt"
	"strings"
)

// Credential reports whether e holds one of the operator's secrets, and where (the
// value or the subsection): THE rule of what counts as a credential in a git config
// (docs/bwrap.md, "Credentials in the repository's git config"). A credential is
//   - any non-empty http.extraheader or http.<url>.extraheader value (actions/checkout
//     leaves AUTHORIZATION: basic ... there);
//   - a non-empty sendemail.smtppass or imap.pass, which hold passwords;
//   - a URL with userinfo anywhere in a value or a subsection (remote.*.url, pushurl,
//     url.<base>.insteadOf, http.proxy, submodule.*.url, [http "https://u:t@h"]): a
//     password (user:pass@) under any scheme, and any userinfo under http(s) and
//     ftp(s), where a token alone is often the user name (https://TOKEN@host/).
//     ssh://git@host keeps its user name, which is no secret.
func Credential(e Entry) (where string, ok bool) {
	sec, sub, key := e.Parts()
	switch {
	case sec == "http" && key == "extraheader", sec == "sendemail" && key == "smtppass", sec == "imap" && key == "pass":
		// Empty, it holds nothing (an empty extraheader resets the list).
		if strings.TrimSpace(e.Value) != "" {
			return "value", true
		}
	}
	if _, ok := stripUserinfo(sub); ok {
		return "subsection", true
	}
	if _, ok := stripUserinfo(e.Value); ok {
		return "value", true
	}
	return "", false
}

// CredentialName is e's name safe to print: a subsection's URL without its userinfo.
func CredentialName(e Entry) string {
	sec, sub, key := e.Parts()
	if s, ok := stripUserinfo(sub); ok {
		return sec + "." + s + "." + key
	}
	return e.Name
}

// stripUserinfo returns s with the userinfo of its URL removed, and whether it had one
// that Credential counts.
func stripUserinfo(s string) (string, bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return s, false
	}
	scheme := strings.ToLower(strings.TrimSpace(s[:i]))
	rest := s[i+3:]
	auth := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		auth = rest[:j]
	}
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return s, false
	}
	info := auth[:at]
	switch {
	case strings.Contains(info, ":"):
	case strings.HasSuffix(scheme, "http") || strings.HasSuffix(scheme, "https") || strings.HasSuffix(scheme, "ftp") || strings.HasSuffix(scheme, "ftps"):
		// git-remote-https and friends (also "git+https" spellings) take a token as user.
	default:
		return s, false
	}
	return s[:i+3] + rest[at+1:], true
}

// CredentialError: a config still holds a credential after Redact (box's own fault,
// but the launch must not go ahead).
type CredentialError struct{ Key string }

func (e *CredentialError) Error() string {
	return fmt.Sprintf("the redacted copy still holds a credential (%s)", e.Key)
}

// Redact is data, the config that parsed to entries, with every credential Credential
// finds removed: value credentials emptied (an empty http.extraheader resets git's list
// of extra headers, so no header is sent), userinfo cut from URLs in values and
// subsections. Where every credential is in a value, only those lines are rewritten and
// the rest (comments, layout) stays as written; a credential in a section header is
// cut by writing the entries anew, in order, which drops the comments. Every key stays,
// so git reads the rest as before. The result is parsed back: if it does not give the
// same keys, or still holds a credential, it is an error.
func Redact(data []byte, entries []Entry) ([]byte, error) {
	out, ok := redactLines(data, entries)
	if !ok {
		out = redactAnew(entries)
	}
	back, err := ParseConfig(out)
	if err != nil {
		return nil, err
	}
	if len(back) != len(entries) {
		return nil, fmt.Errorf("the redacted copy has %d keys, the config %d", len(back), len(entries))
	}
	for i, e := range back {
		_, _, k1 := e.Parts()
		_, _, k2 := entries[i].Parts()
		if k1 != k2 {
			return nil, fmt.Errorf("the redacted copy's key %d is %s, the config's %s", i+1, e.Name, entries[i].Name)
		}
		if _, bad := Credential(e); bad {
			return nil, &CredentialError{Key: e.Name}
		}
	}
	return out, nil
}

// redactedValue is e's value without its credential.
func redactedValue(e Entry) string {
	if s, cut := stripUserinfo(e.Value); cut {
		return s
	}
	return ""
}

// redactLines rewrites only the lines of value credentials (false: a credential is in a
// subsection, or a span does not fit data).
func redactLines(data []byte, entries []Entry) ([]byte, bool) {
	var b []byte
	at := 0
	for _, e := range entries {
		where, ok := Credential(e)
		if !ok {
			continue
		}
		if where != "value" || e.Start < at || e.End > len(data) || e.Start >= e.End {
			return nil, false
		}
		_, _, key := e.Parts()
		b = append(append(b, data[at:e.Start]...), key+" = "+quote(redactedValue(e))+"\n"...)
		at = e.End
	}
	return append(b, data[at:]...), true
}

// redactAnew writes the entries anew, in order, credentials removed.
func redactAnew(entries []Entry) []byte {
	var b strings.Builder
	last := "\x00"
	for _, e := range entries {
		sec, sub, key := e.Parts()
		value := e.Value
		if where, ok := Credential(e); ok {
			if s, cut := stripUserinfo(sub); cut {
				sub = s
			}
			if _, cut := stripUserinfo(value); cut || where == "value" {
				value = redactedValue(e)
			}
		}
		header := "[" + sec + "]"
		if sub != "" {
			header = "[" + sec + " \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(sub) + "\"]"
		}
		if header != last {
			b.WriteString(header + "\n")
			last = header
		}
		if !e.HasValue {
			b.WriteString("\t" + key + "\n")
			continue
		}
		b.WriteString("\t" + key + " = " + quote(value) + "\n")
	}
	return []byte(b.String())
}

// quote is s as a double-quoted git config value.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`)
	return `"` + r.Replace(s) + `"`
}
