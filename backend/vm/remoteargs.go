package vm

import (
	"strings"

	"github.com/heavy-duty/box/internal/errs"
)

// RemoteVerbs are the verbs that take --remote: every vm verb (cmd/box's
// TestRemoteFlagOnEveryVMVerb holds this list to its vm group), and setup-host and
// doctor, which build and check a remote's stack through its incusd. A list by name:
// walking the command tree would sort it and change which verb a typo is told it meant.
var RemoteVerbs = []string{"new", "list", "info", "shell", "tmux", "exec", "snapshot", "restore", "rename",
	"start", "stop", "rm", "incus", "export", "import", "expose", "setup-host", "doctor"}

// LocalVerbs act on this machine's stack (its firewall, its boxes probed from this
// host): with BOX_REMOTE set they are refused by name, never ignored (box drill only
// with --backend vm: the bwrap drill has nothing to do with Incus).
var LocalVerbs = []string{"teardown-host", "migrate-host", "drill"}

// RemoteArgs reads the REMOTE: prefixes of one command's box names. Two different
// remotes in one command, or a prefix that contradicts --remote (Flag), are usage
// errors: box never moves a box between daemons.
type RemoteArgs struct {
	Flag string // --remote, "" when not given
	Seen string // the remote the prefixes named so far
}

// Take strips REMOTE: from v (what names it in an error) and notes the remote.
func (r *RemoteArgs) Take(what, v string) (string, error) {
	remote, name, ok := strings.Cut(v, ":")
	if !ok {
		return v, nil
	}
	if remote == "" || name == "" {
		return "", errs.Usage("write REMOTE:NAME, e.g. lab:work, or --remote lab work", "%s %q: an empty remote or name", what, v)
	}
	switch {
	case r.Flag != "" && remote != r.Flag:
		return "", errs.Usage("drop the prefix or the flag", "%s %q names remote %s, but --remote is %s", what, v, remote, r.Flag)
	case r.Seen != "" && remote != r.Seen:
		return "", errs.Usage("box acts on one daemon at a time; copy between remotes with incus itself", "%s %q names remote %s, another argument remote %s", what, v, remote, r.Seen)
	}
	r.Seen = remote
	return name, nil
}

// Args strips REMOTE: from verb's arguments that name boxes, in place: the first n
// (those before a "--"; both of rename's, the first of any other verb's, none of list's,
// new's or import's, whose boxes are flags). Files, labels, ports and commands are never
// rewritten.
func (r *RemoteArgs) Args(verb string, args []string, n int) error {
	n = min(n, len(args))
	switch verb {
	case "list", "new", "import":
		n = 0
	case "rename":
		n = min(n, 2)
	default:
		n = min(n, 1)
	}
	for i := range n {
		v, err := r.Take("box", args[i])
		if err != nil {
			return err
		}
		args[i] = v
	}
	return nil
}

// BoxFlags are verb's flags that name boxes, and so may carry a REMOTE: prefix.
func BoxFlags(verb string) []string {
	switch verb {
	case "new":
		return []string{"name", "from"}
	case "import":
		return []string{"name"}
	}
	return nil
}
