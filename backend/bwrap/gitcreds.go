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

// resolveGitCreds finds the credentials in pset's git configs (read into reads) and
// plans a redacted copy of each file holding one. A file not read or not parsed is a
// refusal; so is a copy that still holds a credential.
func (p *Plan) resolveGitCreds(pset protect.Set, reads map[string]GitConfigRead, instanceDir string) error {
	if protectionOff(ProtGitCreds) {
		return nil
	}
	for _, file := range gitConfigFiles(pset) {
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
			continue
		}
		data, err := postrun.Redact(entries)
		if err != nil {
			return errs.WithHint(&GitConfigError{File: file, Err: err}, "remove the credential from the config (git config --file FILE --unset KEY) and use a credential helper")
		}
		p.GitCreds = append(p.GitCreds, found...)
		p.Spec.Redacted = append(p.Spec.Redacted, RedactedConfig{
			Path: file, Copy: filepath.Join(instanceDir, "git-redacted", fmt.Sprintf("%d.config", len(p.Spec.Redacted))), Data: data,
		})
		for _, c := range found {
			p.warn("%s holds a credential (%s, in its %s): the sandbox sees a copy without it", c.File, c.Key, c.Where)
		}
	}
	return nil
}

// landlockGitCreds is the Landlock mode's refusal of a credential it cannot hide.
func (p *Plan) landlockGitCreds() error {
	if len(p.GitCreds) == 0 {
		return nil
	}
	return errs.WithHint(&GitCredsError{Creds: p.GitCreds},
		fmt.Sprintf("remove it from the config (git config --file %s --unset-all KEY, or --remove-section for a URL section) and use a credential helper; or run in the namespaces mode (--isolation bwrap), which binds a copy without it", p.GitCreds[0].File))
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
