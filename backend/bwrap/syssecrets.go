package bwrap

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/policy"
)

// The system paths are bound read-only, so a credential an administrator left in a
// well-known file there (policy.SystemSecrets: /etc/npmrc's _authToken, /etc/nix/nix.conf's
// access-tokens, a 0644 k3s kubeconfig) is readable inside. Box cannot hide them without
// breaking the tools that read them, so it says so before launch, file and key, never
// the value; a file it cannot read (other than missing or refused to you, and so to the
// sandbox) is said too.

// systemSecretFiles are the policy's files present here, globs expanded.
func systemSecretFiles() []string {
	var out []string
	for _, s := range policy.SystemSecrets {
		m, _ := filepath.Glob(s.Path)
		out = append(out, m...)
	}
	return out
}

// systemSecretWhat is what policy says path is.
func systemSecretWhat(path string) string {
	for _, s := range policy.SystemSecrets {
		if ok, _ := filepath.Match(s.Path, path); ok {
			return s.What
		}
	}
	return ""
}

// SecretKeys are the keys of data's lines that look like credentials (envaudit.Check on
// each KEY=VALUE, KEY: VALUE or KEY = VALUE line; a netrc line's password), by name.
func SecretKeys(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		f := strings.Fields(line)
		if i := indexField(f, "password"); i >= 0 && i+1 < len(f) {
			out = append(out, "password (netrc)")
			continue
		}
		// KEY=VALUE, KEY = VALUE, or YAML's KEY: VALUE (npmrc's keys hold a colon).
		i, sep := strings.IndexByte(line, '='), 1
		if j := strings.Index(line, ": "); j >= 0 && (i < 0 || j < i) {
			i, sep = j, 2
		}
		if i <= 0 {
			continue
		}
		key := strings.TrimSpace(strings.TrimPrefix(line[:i], "export "))
		value := strings.Trim(strings.TrimSpace(line[i+sep:]), `"'`)
		if envaudit.Check(key, value) != "" {
			out = append(out, key)
		}
	}
	return out
}

func indexField(f []string, s string) int {
	for i, x := range f {
		if x == s {
			return i
		}
	}
	return -1
}

// auditSystemSecrets warns of each system file that holds what looks like a credential.
func (p *Plan) auditSystemSecrets(reads map[string]GitConfigRead) {
	for _, file := range slices.Sorted(maps.Keys(reads)) {
		r := reads[file]
		if r.Err != nil {
			p.warn("cannot check %s (%s) for credentials: %v; the sandbox may read it", file, systemSecretWhat(file), r.Err)
			continue
		}
		if keys := SecretKeys(r.Data); len(keys) > 0 {
			p.warn("%s (%s) looks like it holds a credential (%s): the sandbox can read it (box hides only git's configs); take it out, or make the file readable by root only", file, systemSecretWhat(file), strings.Join(keys, ", "))
		}
	}
}

// readSystemSecrets reads the policy's files for Facts; one missing or refused to you
// (and so to the sandbox) is left out.
func readSystemSecrets() map[string]GitConfigRead {
	reads := readGitConfigs(systemSecretFiles())
	for f, r := range reads {
		if errors.Is(r.Err, os.ErrNotExist) || errors.Is(r.Err, os.ErrPermission) {
			delete(reads, f)
		}
	}
	return reads
}
