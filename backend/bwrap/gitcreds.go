package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/shellquote"
)

// Credentials in the repository's git config (docs/bwrap.md): the config files are in
// the protected set, read-only but readable inside, and actions/checkout leaves
// http.extraheader = AUTHORIZATION: basic ... there, a clone of https://user:token@host
// keeps the token in remote.origin.url. What counts as a credential is
// postrun.Credential. The namespaces mode binds a redacted copy over each file that
// holds one; the Landlock mode, which cannot bind, refuses to launch.

// ProtGitCreds is the redaction of the git configs' credentials: a test build can switch
// it off (BOX_UNSAFE_OFF=git-creds), so the drill shows the marker read.
const ProtGitCreds = "git-creds"

// ProtSystemGitCreds is the same redaction for the git configs the sandbox reads under
// the system paths (/etc/gitconfig and what it includes): BOX_UNSAFE_OFF=system-git-creds.
const ProtSystemGitCreds = "system-git-creds"

// SystemGitConfig is git's system config on every distribution box knows (Debian's,
// Fedora's, Arch's and NixOS's git are built with sysconfdir=/etc). /etc is bound
// read-only inside, so any process there reads it; git inside does not (box points
// GIT_CONFIG_SYSTEM at its own file), but cat does.
const SystemGitConfig = "/etc/gitconfig"

// gitIncludeDepth is git's own bound on nested includes.
const gitIncludeDepth = 10

// gitConfigEntries are the protected set's entries git reads as config.
var gitConfigEntries = []string{"git:config", "git:config.worktree", "git:include"}

// GitConfigRead is one git config file as Gather read it (ConfigReadMax at most).
type GitConfigRead struct {
	Data []byte
	Err  error
}

// gitConfigReadMax bounds one config read; a larger file is a refusal, not a partial read.
const gitConfigReadMax = 4 << 20

// GitCred is one credential found: the file and the key, never the value.
type GitCred struct {
	File, Key string // Key as postrun.CredentialName prints it
	Where     string // "value" or "subsection" (a URL with userinfo in [section "URL"])
}

// RedactedConfig is a copy of Path without its credentials, written at Copy (in the
// instance directory, which the sandbox cannot write) and bound read-only over Path.
type RedactedConfig struct {
	Path, Copy string
	Data       []byte `json:"-"`
}

// GitConfigError: a protected git config box could not read or parse; the sandbox could
// read it, so box cannot tell what it gives away.
type GitConfigError struct {
	File string
	Err  error
}

func (e *GitConfigError) Error() string {
	return fmt.Sprintf("cannot check %s for credentials: %v", e.File, e.Err)
}
func (e *GitConfigError) Unwrap() error { return e.Err }

// GitCredsError: the Landlock mode cannot hide a credential in a git config (no mount
// namespace to bind a redacted copy over it).
type GitCredsError struct{ Creds []GitCred }

func (e *GitCredsError) Error() string {
	return fmt.Sprintf("the Landlock mode (--isolation landlock) cannot hide the credential in %s: the sandbox could read it (no mount namespace to bind a redacted copy over it)", credList(e.Creds))
}

func credList(cs []GitCred) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.File+" ("+c.Key+")")
	}
	return strings.Join(s, ", ")
}

// gitConfigFiles are the protected set's git config files present at launch.
func gitConfigFiles(s protect.Set) []string {
	var out []string
	for _, p := range s.Protected {
		for _, n := range gitConfigEntries {
			if p.Entry == n && !p.Absent && !p.Dir {
				out = append(out, p.Path)
			}
		}
	}
	return out
}

// readGitConfigs reads files as git does (following links) for Facts.GitConfigs.
func readGitConfigs(files []string) map[string]GitConfigRead {
	m := make(map[string]GitConfigRead, len(files))
	for _, f := range files {
		var r GitConfigRead
		fh, err := os.Open(f)
		if err == nil {
			r.Data, err = io.ReadAll(io.LimitReader(fh, gitConfigReadMax+1))
			fh.Close()
			if err == nil && len(r.Data) > gitConfigReadMax {
				err = fmt.Errorf("larger than %d bytes", gitConfigReadMax)
			}
		}
		r.Err = err
		m[f] = r
	}
	return m
}

// systemGitConfigs are the git configs outside the working directory that the sandbox
// can read, for Facts: /etc/gitconfig, the operator's global configs where they lie
// under a system path (GIT_CONFIG_GLOBAL=/etc/..., an XDG_CONFIG_HOME under /opt), and
// what they include there, read into reads (which may hold the protected set's already).
// A file missing or not readable by the operator is left out: the sandbox, the same
// user, cannot read it either. Any other failure stays in reads, for Resolve to refuse.
func systemGitConfigs(env map[string]string, reads map[string]GitConfigRead) []string {
	var out []string
	var visit func(path string, depth int)
	visit = func(path string, depth int) {
		if _, seen := reads[path]; seen || depth > gitIncludeDepth || !underSystemPath(path) {
			return
		}
		r := readGitConfigs([]string{path})[path]
		if errors.Is(r.Err, os.ErrNotExist) || errors.Is(r.Err, os.ErrPermission) {
			return
		}
		reads[path] = r
		out = append(out, path)
		if r.Err != nil {
			return
		}
		entries, err := postrun.ParseConfig(r.Data)
		if err != nil {
			return // Resolve refuses the file
		}
		for _, e := range entries {
			if sec, _, key := e.Parts(); (sec == "include" || sec == "includeif") && key == "path" && e.Value != "" {
				inc := e.Value
				if strings.HasPrefix(inc, "~") {
					continue // the operator's home, hidden inside
				}
				if !filepath.IsAbs(inc) {
					inc = filepath.Join(filepath.Dir(path), inc)
				}
				visit(filepath.Clean(inc), depth+1)
			}
		}
	}
	visit(SystemGitConfig, 0)
	for _, g := range globalGitConfigs(env) {
		visit(g, 0)
	}
	return out
}

// underSystemPath reports whether p lies in a system path the sandbox sees read-only.
func underSystemPath(p string) bool {
	for _, s := range systemPaths {
		if strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// resolveGitCreds finds the credentials in pset's git configs and in the system ones
// the sandbox reads (all read into reads) and plans a redacted copy of each file holding
// one. A file not read or not parsed is a refusal; so is a copy that still holds a
// credential.
func (p *Plan) resolveGitCreds(pset protect.Set, system []string, reads map[string]GitConfigRead, instanceDir string) error {
	for _, file := range system {
		if HoldsGitCredential(reads[file].Data) {
			p.SystemGitCreds = append(p.SystemGitCreds, file)
		}
	}
	var files []string
	if !protectionOff(ProtGitCreds) {
		files = gitConfigFiles(pset)
	}
	if !protectionOff(ProtSystemGitCreds) {
		files = append(files, system...)
	}
	for _, file := range files {
		if err := p.redactGitConfig(file, reads, instanceDir); err != nil {
			return err
		}
	}
	return nil
}

// HoldsGitCredential reports whether a git config holds a credential (postrun.Credential);
// a config that does not parse holds none it can say.
func HoldsGitCredential(data []byte) bool {
	entries, _ := postrun.ParseConfig(data)
	for _, e := range entries {
		if _, ok := postrun.Credential(e); ok {
			return true
		}
	}
	return false
}

// redactGitConfig plans the redacted copy of one config, if it holds a credential.
func (p *Plan) redactGitConfig(file string, reads map[string]GitConfigRead, instanceDir string) error {
	r, ok := reads[file]
	if !ok {
		r.Err = errors.New("not read before launch")
	}
	if r.Err != nil {
		return errs.WithHint(&GitConfigError{File: file, Err: r.Err}, "make it a readable regular file (git cannot use it either), or remove it")
	}
	entries, err := postrun.ParseConfig(r.Data)
	if err != nil {
		return errs.WithHint(&GitConfigError{File: file, Err: err}, "fix the line (git refuses the file too: git config --file FILE --list)")
	}
	var found []GitCred
	for _, e := range entries {
		if where, ok := postrun.Credential(e); ok {
			found = append(found, GitCred{File: file, Key: postrun.CredentialName(e), Where: where})
		}
	}
	if len(found) == 0 {
		return nil
	}
	data, err := postrun.Redact(r.Data, entries)
	if err != nil {
		return errs.WithHint(&GitConfigError{File: file, Err: err}, "remove the credential from the config (git config --file FILE --unset KEY) and use a credential helper")
	}
	p.GitCreds = append(p.GitCreds, found...)
	p.Spec.Redacted = append(p.Spec.Redacted, RedactedConfig{
		Path: file, Copy: filepath.Join(instanceDir, "git-redacted", fmt.Sprintf("%d.config", len(p.Spec.Redacted))), Data: data,
	})
	p.warn("%s", credsWarning(file, found))
	return nil
}

// credsWarning says, in one line per file, the credentials a config holds (keys and
// where, never the values). Field review, session 18: a config with two said it twice.
func credsWarning(file string, found []GitCred) string {
	if len(found) == 1 {
		return fmt.Sprintf("%s holds a credential (%s, in its %s): the sandbox sees a copy without it", file, found[0].Key, found[0].Where)
	}
	what := make([]string, len(found))
	for i, c := range found {
		what[i] = c.Key + ", in its " + c.Where
	}
	return fmt.Sprintf("%s holds %d credentials (%s): the sandbox sees a copy without them", file, len(found), strings.Join(what, "; "))
}

// landlockGitCreds is the Landlock mode's refusal of a credential it cannot hide.
func (p *Plan) landlockGitCreds() error {
	if len(p.GitCreds) == 0 {
		return nil
	}
	return errs.WithHint(&GitCredsError{Creds: p.GitCreds},
		fmt.Sprintf("remove it from the config (git config --file %s --unset-all KEY, or --remove-section for a URL section) and use a credential helper; or run in the namespaces mode (--isolation bwrap), which binds a copy without it", shellquote.Quote(p.GitCreds[0].File)))
}

// writeRedacted writes the redacted copies Args binds (launch time, not dry-run).
func (s Spec) writeRedacted() error {
	for _, r := range s.Redacted {
		if err := os.MkdirAll(filepath.Dir(r.Copy), 0o700); err != nil {
			return err
		}
		if err := writeHealing(r.Copy, r.Data); err != nil {
			return err
		}
	}
	return nil
}
