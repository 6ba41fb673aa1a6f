package bwrap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// GitIdentity is the operator's git user.name and user.email: the two values, nothing
// else of their git configuration (no credentials, signing keys or includes).
type GitIdentity struct {
	Name, Email string
}

// Set reports whether there is anything to pass.
func (g GitIdentity) Set() bool { return g.Name != "" || g.Email != "" }

// String is the identity as a commit shows it.
func (g GitIdentity) String() string {
	switch {
	case g.Name != "" && g.Email != "":
		return fmt.Sprintf("%s <%s>", g.Name, g.Email)
	case g.Email != "":
		return "<" + g.Email + ">"
	}
	return g.Name
}

// GitConfigFile is the sandbox's git system configuration, in the agent's state dir
// (GIT_CONFIG_SYSTEM points at it): the operator's identity at the lowest precedence,
// so `git config --global` inside (the sandbox's own $HOME) overrides it.
const GitConfigFile = "box-gitconfig"

// gitIdentityTimeout bounds the host's git: a launch does not hang on it.
const gitIdentityTimeout = 5 * time.Second

// ReadGitIdentity asks the host's git for the operator's global user.name and
// user.email (git config --global: ~/.gitconfig and ~/.config/git/config, includes
// not followed). It runs from / so no repository's configuration is read. A git that
// is absent or has no identity gives an empty one.
func ReadGitIdentity(environ []string) GitIdentity {
	get := func(key string) string {
		ctx, cancel := context.WithTimeout(context.Background(), gitIdentityTimeout)
		defer cancel()
		c := exec.CommandContext(ctx, "git", "config", "--global", "--get", key)
		c.Dir, c.Env = "/", environ
		var out bytes.Buffer
		c.Stdout = &out
		if err := c.Run(); err != nil {
			return ""
		}
		return strings.TrimSuffix(out.String(), "\n")
	}
	return GitIdentity{Name: get("user.name"), Email: get("user.email")}
}

// gitValueOK refuses what would not survive a round trip through a config file as one
// value: control characters (a newline would add keys of its own).
func gitValueOK(v string) bool {
	return !strings.ContainsFunc(v, unicode.IsControl)
}

// gitQuote quotes v as a git config value.
func gitQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// GitConfigText is the sandbox's git system configuration: the host's /etc/gitconfig
// (which GIT_CONFIG_SYSTEM replaces; git skips a missing include), then the identity.
// Pure.
func GitConfigText(g GitIdentity) string {
	var b strings.Builder
	b.WriteString("# Written by box at every launch: the operator's git identity. Override it with\n# git config --global (this sandbox's own home).\n")
	b.WriteString("[include]\n\tpath = /etc/gitconfig\n[user]\n")
	if g.Name != "" {
		fmt.Fprintf(&b, "\tname = %s\n", gitQuote(g.Name))
	}
	if g.Email != "" {
		fmt.Fprintf(&b, "\temail = %s\n", gitQuote(g.Email))
	}
	return b.String()
}

// gitIdentity decides what the plan passes: the host's identity unless the profile
// turns it off (git_identity = false) or a value cannot be passed as it is. It sets
// GIT_CONFIG_SYSTEM among box's variables and the policy SANDBOX.md renders.
func (p *Plan) gitIdentity(on bool, g GitIdentity, home, stateDir string, boxSet map[string]string) {
	if !on || !g.Set() {
		return
	}
	if !gitValueOK(g.Name) || !gitValueOK(g.Email) {
		p.warn("your git user.name or user.email holds a control character: not passed into the sandbox (set it inside with git config --global)")
		return
	}
	p.Git = g
	boxSet["GIT_CONFIG_SYSTEM"] = filepath.Join(home, stateDir, GitConfigFile)
}

// WriteGitConfig writes (or, when the plan passes no identity, removes) the sandbox's
// git configuration in the instance directory's state dir. The sandbox writes that
// directory: what is there is replaced, never followed.
func (p *Plan) WriteGitConfig() error {
	path := filepath.Join(p.Spec.InstanceDir, p.Spec.StateDir, GitConfigFile)
	if !p.Git.Set() {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			return os.Remove(path)
		}
		return nil
	}
	return writeHealing(path, []byte(GitConfigText(p.Git)))
}

// gitText is SANDBOX.md's line about git: who commits, and where a setting goes when the
// repository's .git/config is read-only (git's own message is "Device or resource busy").
func gitText(identity string) string {
	const where = "set git settings with `git config --global` (this sandbox's own home) or `git -c KEY=VALUE`, never `git config` alone: the repository's own config (.git/config) is read-only here and writing it fails with \"Device or resource busy\"."
	if identity == "" {
		return "- Git: no commit identity is set: " + where + " For example `git config --global user.name NAME` and `git config --global user.email EMAIL`.\n"
	}
	return fmt.Sprintf("- Git: commits are made as `%s` (the operator's identity); to change it or any other setting, %s\n", identity, where)
}

// ReportGitIdentity is the launch audit's line about the identity passed in.
func (p *Plan) ReportGitIdentity(w io.Writer) {
	if p.Git.Set() {
		fmt.Fprintf(w, "box: git commits as %s (your git config's user.name and user.email; a profile's git_identity = false keeps them out)\n", p.Git)
	}
}
