package templates

import (
	"fmt"
	"sort"
	"strings"
)

// boxEnvKeys are the keys an upstream box.env may set. The file is read line by line,
// never sourced: sourcing would hand every template arbitrary shell on the host.
var boxEnvKeys = map[string]func(t *Template, v string) error{
	"BOX_DESCRIPTION":    func(t *Template, v string) error { t.Description = v; return nil },
	"BOX_IMAGE":          func(t *Template, v string) error { t.Image = v; return nil },
	"BOX_USER":           func(t *Template, v string) error { t.User = v; return nil },
	"BOX_CPU":            func(t *Template, v string) error { t.CPU = v; return nil },
	"BOX_MEMORY":         func(t *Template, v string) error { t.Memory = v; return nil },
	"BOX_DISK":           func(t *Template, v string) error { t.Disk = v; return nil },
	"BOX_REQUIRE_VM":     func(t *Template, v string) (err error) { t.RequireVM, err = envBool(v); return },
	"BOX_AUTOSTART":      func(t *Template, v string) (err error) { t.Autostart, err = envBool(v); return },
	"BOX_BOOTSTRAP_ROLE": func(t *Template, v string) error { t.BootstrapRole = v; return nil },
}

// BoxEnvKeys lists the accepted box.env keys, sorted.
func BoxEnvKeys() []string {
	keys := make([]string, 0, len(boxEnvKeys))
	for k := range boxEnvKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func envBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no", "":
		return false, nil
	}
	return false, fmt.Errorf("want 1 or 0 (true or false), got %q", v)
}

// LineError is a box.env line that could not be read.
type LineError struct {
	File string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseBoxEnv reads an upstream box.env: KEY="value" lines, comments and blank lines.
// Anything a shell would expand or execute is refused rather than taken literally, so
// the file means the same to box as it would have meant to the bash tool.
func ParseBoxEnv(file string, data []byte) (*Template, error) {
	t := &Template{}
	seen := map[string]int{}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, &LineError{file, n, "want KEY=\"value\""}
		}
		if strings.HasPrefix(key, "export ") {
			key = strings.TrimSpace(strings.TrimPrefix(key, "export "))
		}
		if !envKeyRE(key) {
			return nil, &LineError{file, n, fmt.Sprintf("%q is not a KEY (want KEY=\"value\", no spaces around =)", key)}
		}
		set, known := boxEnvKeys[key]
		if !known {
			if isNetworkKey(key) {
				return nil, &NetworkError{File: file, Line: n, Key: key}
			}
			return nil, &LineError{file, n, fmt.Sprintf("unknown key %s (allowed: %s)", key, strings.Join(BoxEnvKeys(), ", "))}
		}
		if prev, dup := seen[key]; dup {
			return nil, &LineError{file, n, fmt.Sprintf("%s is set twice (first on line %d)", key, prev)}
		}
		seen[key] = n
		v, err := envValue(val)
		if err != nil {
			return nil, &LineError{file, n, fmt.Sprintf("%s: %v", key, err)}
		}
		if err := set(t, v); err != nil {
			return nil, &LineError{file, n, fmt.Sprintf("%s: %v", key, err)}
		}
	}
	if err := t.Validate(); err != nil {
		return nil, wrapFile(file, err)
	}
	return t, nil
}

func envKeyRE(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// envValue reads "double", 'single' or bare values; a trailing # comment is allowed
// after a quoted value.
func envValue(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	switch v[0] {
	case '"', '\'':
		q := v[0]
		end := strings.IndexByte(v[1:], q)
		if end < 0 {
			return "", fmt.Errorf("unterminated %c quote", q)
		}
		inner, rest := v[1:1+end], strings.TrimSpace(v[2+end:])
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return "", fmt.Errorf("unexpected text after the closing quote: %q", rest)
		}
		if q == '"' && strings.ContainsAny(inner, "$`\\") {
			return "", fmt.Errorf("value uses $, ` or \\: box.env is never run by a shell, so nothing is expanded")
		}
		return inner, nil
	}
	if strings.ContainsAny(v, " \t\"'$`\\;&|<>(){}*?![]#~") {
		return "", fmt.Errorf("unquoted value %q has shell characters: quote it with \"...\"", v)
	}
	return v, nil
}

func wrapFile(file string, err error) error { return fmt.Errorf("%s: %w", file, err) }
