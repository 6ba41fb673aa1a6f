package bwrap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/heavy-duty/box/backend/bwrap/postrun"
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

// gitConfigMax bounds what is read of one global config file (a user's is a few hundred
// bytes); a larger file is read up to it.
const gitConfigMax = 1 << 20

// ReadGitIdentity is the operator's global user.name and user.email, read from the
// global config files as the host's git reads them for a commit, without running git
// (a launch paid for two git processes): $GIT_CONFIG_GLOBAL alone when it is set, else
// $XDG_CONFIG_HOME/git/config (~/.config/git/config when unset) then ~/.gitconfig, with
// git's own parser (postrun.ParseConfig); the last value wins. Includes are not followed
// and the system and repository configs are not read. A file that is missing,
// unreadable or not a regular file is skipped, as git skips it; a file git would refuse
// (a bad line) gives no identity, as git config --global gave none.
func ReadGitIdentity(environ []string) GitIdentity {
	var g GitIdentity
	for _, e := range globalGitEntries(environ) {
		switch e.Name {
		case "user.name":
			g.Name = e.Value
		case "user.email":
			g.Email = e.Value
		}
	}
	return g
}

// ReadGitSigning names what the operator's global git config signs every time, read as
// ReadGitIdentity reads it: "commit" (commit.gpgsign), "tag" (tag.gpgsign), both
// ("commit and tag"), or "". None of that config, the key or its agent enters, so what
// the sandbox commits is unsigned (field review, session 20: silently so).
//
// The files those configs include (include.path, and includeIf.*.path whatever its
// condition: a signing that holds for some repositories is said too) are read in
// place, as git reads them: dotfiles keep the signing in an included file, and it was
// passed over in silence (hostile review of session 20's warning, session 21).
func ReadGitSigning(environ []string) string {
	var commit, tag bool
	for _, e := range globalGitEntriesIncluded(environ) {
		switch e.Name {
		case "commit.gpgsign":
			commit = gitBool(e)
		case "tag.gpgsign":
			tag = gitBool(e)
		}
	}
	switch {
	case commit && tag:
		return "commit and tag"
	case commit:
		return "commit"
	case tag:
		return "tag"
	}
	return ""
}

// globalGitEntries are the entries of the operator's global git config files in git's
// order (globalGitConfigs): none when one of them is a file git would refuse.
func globalGitEntries(environ []string) []postrun.Entry {
	var all []postrun.Entry
	for _, path := range globalGitConfigs(envMap(environ)) {
		data, ok := readGitConfig(path)
		if !ok {
			continue
		}
		entries, err := postrun.ParseConfig(data)
		if err != nil {
			return nil
		}
		all = append(all, entries...)
	}
	return all
}

// globalGitEntriesIncluded is globalGitEntries with the files each includes read in
// place, relative paths against the including file's directory, ~/ against HOME, to
// git's depth of 10 and at most 64 files in all.
func globalGitEntriesIncluded(environ []string) []postrun.Entry {
	env := envMap(environ)
	var all []postrun.Entry
	files := 0
	var walk func(path string, depth int) bool
	walk = func(path string, depth int) bool {
		if files++; files > 64 {
			return true
		}
		data, ok := readGitConfig(path)
		if !ok {
			return true // as git: an include that is not there is no error
		}
		entries, err := postrun.ParseConfig(data)
		if err != nil {
			return false
		}
		for _, e := range entries {
			all = append(all, e)
			if !e.HasValue || depth >= 10 || !(e.Name == "include.path" || strings.HasPrefix(e.Name, "includeif.") && strings.HasSuffix(e.Name, ".path")) {
				continue
			}
			inc := e.Value
			if rest, ok := strings.CutPrefix(inc, "~/"); ok && env["HOME"] != "" {
				inc = filepath.Join(env["HOME"], rest)
			} else if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(path), inc)
			}
			if !walk(inc, depth+1) {
				return false
			}
		}
		return true
	}
	for _, path := range globalGitConfigs(env) {
		if !walk(path, 0) {
			return nil
		}
	}
	return all
}

// gitBool is a config value as git_parse_maybe_bool reads it: a bare key, true, yes, on
// or a nonzero number is true; what git would refuse is taken as false.
func gitBool(e postrun.Entry) bool {
	if !e.HasValue {
		return true
	}
	switch v := strings.ToLower(strings.TrimSpace(e.Value)); v {
	case "true", "yes", "on":
		return true
	case "", "false", "no", "off":
		return false
	default:
		n, err := strconv.ParseInt(v, 0, 64)
		return err == nil && n != 0
	}
}

// globalGitConfigs are git's global config files for env, in the order git reads them
// (git_global_config_paths).
func globalGitConfigs(env map[string]string) []string {
	if v, ok := env["GIT_CONFIG_GLOBAL"]; ok {
		return []string{v}
	}
	home := env["HOME"]
	var paths []string
	if x := env["XDG_CONFIG_HOME"]; x != "" {
		paths = append(paths, filepath.Join(x, "git", "config"))
	} else if home != "" {
		paths = append(paths, filepath.Join(home, ".config", "git", "config"))
	}
	if home != "" {
		paths = append(paths, filepath.Join(home, ".gitconfig"))
	}
	return paths
}

// readGitConfig reads a regular file (a FIFO or device is not waited on), up to
// gitConfigMax bytes.
func readGitConfig(path string) ([]byte, bool) {
	if path == "" {
		return nil, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, gitConfigMax))
	return data, err == nil
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
	text := []byte(GitConfigText(p.Git))
	if cur, err := readRegular(path); err == nil && bytes.Equal(cur, text) {
		return nil // as SANDBOX.md: the same bytes are not rewritten on every launch
	}
	return writeHealing(path, text)
}

// gitText is SANDBOX.md's line about git: who commits, and where a setting goes when the
// repository's .git/config is read-only (git's own message is "Device or resource busy").
func gitText(identity string) string {
	// Field test (session 19): an agent's `git worktree add ../feature` under the home
	// "worked", into the home's tmpfs, and its uncommitted work vanished with the session.
	const worktree = " A `git worktree add` outside the working directory (`../NAME`) lands in scratch space that vanishes when the session ends (only its commits stay, in this repository): add worktrees inside the working directory."
	const where = "set git settings with `git config --global` (this sandbox's own home) or `git -c KEY=VALUE`, never `git config` alone: the repository's own config (.git/config) is read-only here and writing it fails with \"Device or resource busy\". So `git push -u`, `git branch --set-upstream-to` and `git checkout --track` record no upstream, though git says they did (field review, session 20): push and pull naming the remote and branch (`git push origin HEAD`)."
	if identity == "" {
		return "- Git: no commit identity is set: " + where + " For example `git config --global user.name NAME` and `git config --global user.email EMAIL`." + worktree + "\n"
	}
	return fmt.Sprintf("- Git: commits are made as `%s` (the operator's identity); to change it or any other setting, %s%s\n", identity, where, worktree)
}

// warnGitSigning says that what the operator's git signs every time (ReadGitSigning) is
// unsigned when made inside, and the ways to sign it.
func (p *Plan) warnGitSigning(signs string) {
	if signs == "" {
		return
	}
	keys := map[string]string{"commit": "commit.gpgsign", "tag": "tag.gpgsign", "commit and tag": "commit.gpgsign, tag.gpgsign"}[signs]
	p.warn("your global git config signs every %s (%s); %ss made inside are unsigned: that config, your signing key and its agent stay out. Sign them on the host after the run (git rebase --exec 'git commit --amend --no-edit -S' BASE), or let box's ssh-agent filter sign inside (a profile's ssh = { ..., sign = true }: docs/bwrap.md#ssh-agent)", signs, keys, strings.ReplaceAll(signs, " and ", "s and "))
}

// ReportGitIdentity is the launch audit's line about the identity passed in.
func (p *Plan) ReportGitIdentity(w io.Writer) {
	if p.Git.Set() {
		fmt.Fprintf(w, "box: git commits as %s (your git config's user.name and user.email; a profile's git_identity = false keeps them out)\n", p.Git)
	}
}
