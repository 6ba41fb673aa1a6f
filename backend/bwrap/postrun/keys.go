package postrun

import "strings"

// ExecKey is one pattern of git config keys that make the host's git run a command the
// config names (or write where it says). Pattern is "section.key", "section.*.key" (any
// subsection), "section.?.key" (with or without a subsection) or "section.*" (any key,
// no subsection); section and key are lowercase, as ParseConfig names them.
type ExecKey struct {
	Pattern string
	// Runs says what executes it, for the report and docs/bwrap.md.
	Runs string
	// When, if set, narrows the pattern to the values that execute.
	When func(sub, value string, hasValue bool) bool
}

// ExecKeys is the audit's list, from git-config(1), git-send-email(1), gitattributes(5)
// and gitremote-helpers(7) of git 2.39, and git-hook(1) of git 2.54 (the configured
// hooks: the host's git may be newer than the one box was tested with); docs/bwrap.md
// explains each. A key added or
// changed during a run that matches is a finding.
var ExecKeys = []ExecKey{
	// Run by everyday commands, often from a shell prompt's `git status`.
	{"core.fsmonitor", "git status, diff, add, commit (every index refresh) run it as the fsmonitor hook", nil},
	{"core.hookspath", "every hook (pre-commit, post-checkout, ...) is run from the directory it names", nil},
	{"core.pager", "git log, diff, show, branch pipe their output through it", nil},
	{"pager.*", "the named git command pipes its output through it", notBool},
	{"core.editor", "git commit, tag, rebase -i, merge open it", nil},
	{"sequence.editor", "git rebase -i opens it", nil},
	{"interactive.difffilter", "git add -p pipes diffs through it", nil},
	{"alias.?.*", "`git NAME` runs the alias through the shell", shellAlias},
	{"include.path", "git reads the file it names as more config (which can hold any key here)", nil},
	{"includeif.*.path", "git reads the file it names as more config when the condition holds", nil},
	// Configured hooks (git 2.54 and later, which the host's git may be, whatever git box
	// was tested with): hook.NAME.command runs on every event hook.NAME.event names, and
	// hook.NAME.enabled turns on one that another config (your global one) defines.
	{"hook.*.command", "git runs it on each event hook.NAME.event names (commit, checkout, push, ...; git 2.54 and later)", nil},
	{"hook.*.event", "git runs hook.NAME.command, wherever it is defined, on the event it names (git 2.54 and later)", nil},
	{"hook.*.enabled", "git runs a configured hook another config file defines and disables (git 2.54 and later)", notFalse},
	{"gc.recentobjectshook", "git gc (and the automatic gc after commit, merge, fetch) runs it through the shell to list objects to keep (git 2.42 and later)", nil},
	// Content drivers, selected by .gitattributes (which the agent writes freely).
	{"diff.external", "git diff runs it instead of the internal diff", nil},
	{"diff.*.textconv", "git diff, log -p, blame run it on files the attributes select", nil},
	{"diff.*.command", "git diff runs it for files the attributes select", nil},
	{"merge.*.driver", "git merge, rebase, cherry-pick, stash run it for files the attributes select", nil},
	{"filter.*.clean", "git add, status, diff run it on files the attributes select", nil},
	{"filter.*.smudge", "git checkout, switch, reset, clone run it on files the attributes select", nil},
	{"filter.*.process", "git add, checkout, status start it as a long-running filter", nil},
	// Transport: git fetch, pull, push, clone, ls-remote, submodule update.
	{"core.sshcommand", "git fetch, push and clone over ssh run it instead of ssh", nil},
	{"core.gitproxy", "git fetch over git:// runs it as the proxy", nil},
	{"core.askpass", "git runs it to ask for a password", nil},
	{"credential.?.helper", "git runs it (a ! value through the shell) whenever a credential is needed", nil},
	{"remote.*.uploadpack", "git fetch from a local or ssh remote runs it as upload-pack", nil},
	{"remote.*.receivepack", "git push to a local or ssh remote runs it as receive-pack", nil},
	{"remote.*.vcs", "git fetch and push run git-remote-NAME as the remote helper", nil},
	{"remote.*.url", "an ext:: URL makes git fetch run its command", extURL},
	{"remote.*.pushurl", "an ext:: URL makes git push run its command", extURL},
	{"url.*.insteadof", "rewrites remote URLs to an ext:: command", extBase},
	{"url.*.pushinsteadof", "rewrites push URLs to an ext:: command", extBase},
	{"protocol.allow", "allows the ext:: transport (URLs that are commands) by default", nil},
	{"protocol.*.allow", "allows the named transport; for ext, URLs that are commands", nil},
	{"core.alternaterefscommand", "git fetch and push run it to list an alternate's refs", nil},
	{"uploadpack.packobjectshook", "git upload-pack (a fetch from this repository) runs it", nil},
	{"submodule.*.update", "git submodule update runs a ! value through the shell", nil},
	// Signing.
	{"gpg.program", "git commit -S, tag -s, log --show-signature, merge --verify-signatures run it", nil},
	{"gpg.*.program", "signing and verifying in that format run it", nil},
	{"gpg.ssh.defaultkeycommand", "ssh signing runs it to find the key", nil},
	// Tools git starts on request.
	{"difftool.*.cmd", "git difftool runs it", nil},
	{"difftool.*.path", "git difftool runs the program it names", nil},
	{"mergetool.*.cmd", "git mergetool runs it", nil},
	{"mergetool.*.path", "git mergetool runs the program it names", nil},
	{"web.browser", "git help --web, instaweb run the browser it names", nil},
	{"browser.*.cmd", "git web--browse runs it", nil},
	{"browser.*.path", "git web--browse runs the program it names", nil},
	{"man.viewer", "git help runs the viewer it names", nil},
	{"man.*.cmd", "git help runs it", nil},
	{"man.*.path", "git help runs the program it names", nil},
	{"instaweb.httpd", "git instaweb runs it", nil},
	{"guitool.*.cmd", "git gui and gitk run it from their Tools menu", nil},
	{"imap.tunnel", "git imap-send runs it", nil},
	{"sendemail.?.smtpserver", "git send-email runs it when it is a path (a sendmail program)", nil},
	{"sendemail.?.tocmd", "git send-email runs it", nil},
	{"sendemail.?.cccmd", "git send-email runs it", nil},
	{"sendemail.?.headercmd", "git send-email runs it", nil},
	{"sendemail.?.sendmailcmd", "git send-email runs it through the shell to send", nil},
	{"tar.*.command", "git archive runs it through the shell to compress (tar.tar.gz.command)", nil},
	// git-lfs, whose filter git runs: its custom transfer agents and extensions.
	{"lfs.*.path", "git-lfs runs the transfer agent it names on fetch and push (lfs.customtransfer.NAME.path)", nil},
	{"lfs.*.clean", "git-lfs runs it on git add for its extension (lfs.extension.NAME.clean)", nil},
	{"lfs.*.smudge", "git-lfs runs it on checkout for its extension (lfs.extension.NAME.smudge)", nil},
	// Writes as the host user, where the agent chooses: trace lines carry names the agent
	// picks (a directory called $(cmd) appended to ~/.bashrc runs on the next shell).
	{"trace2.normaltarget", "every git command appends trace lines to the file it names", nil},
	{"trace2.perftarget", "every git command appends trace lines to the file it names", nil},
	{"trace2.eventtarget", "every git command appends trace events to the file it names", nil},
}

// notBool: pager.CMD = true/false only turns paging on or off; any other value is the
// pager command.
func notBool(_, v string, hasValue bool) bool {
	if !hasValue {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false", "yes", "no", "on", "off", "1", "0", "":
		return false
	}
	return true
}

// notFalse: a boolean key set to anything git reads as true (a bare key is true; an
// empty value is false).
func notFalse(_, v string, hasValue bool) bool {
	if !hasValue {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "no", "off", "0", "":
		return false
	}
	return true
}

// shellAlias: an alias whose value starts with ! is a shell command (git trims no
// space before it, box does: a lookalike is flagged too). Other aliases only expand to
// git arguments, and git refuses aliases that set config (-c) or the environment.
func shellAlias(_, v string, _ bool) bool { return strings.HasPrefix(strings.TrimSpace(v), "!") }

func extURL(_, v string, _ bool) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "ext::")
}

func extBase(sub, _ string, _ bool) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(sub)), "ext::")
}

// DisableConfigHooks leaves the keys of gits newer than 2.39 (git 2.54's configured
// hooks, hook.*; git 2.42's gc.recentObjectsHook) out of the audit's keys, as box did
// before, so the drill's config-hook row can be shown to catch their absence. Only a
// test build sets it.
var DisableConfigHooks bool

// Executes reports the ExecKeys pattern e matches, if any.
func Executes(e Entry) (ExecKey, bool) {
	sec, sub, key := e.Parts()
	for _, k := range ExecKeys {
		if DisableConfigHooks && (strings.HasPrefix(k.Pattern, "hook.") || k.Pattern == "gc.recentobjectshook") {
			continue
		}
		ps, pk, _ := strings.Cut(k.Pattern, ".")
		psub := ""
		if i := strings.LastIndexByte(pk, '.'); i >= 0 {
			psub, pk = pk[:i], pk[i+1:]
		}
		if ps != sec {
			continue
		}
		switch psub {
		case "":
			if sub != "" {
				continue
			}
		case "*":
			if sub == "" {
				continue
			}
		case "?":
		}
		if pk != "*" && pk != key {
			continue
		}
		if k.When != nil && !k.When(sub, e.Value, e.HasValue) {
			continue
		}
		return k, true
	}
	return ExecKey{}, false
}
