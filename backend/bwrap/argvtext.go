package bwrap

import (
	"strings"

	"github.com/heavy-duty/box/internal/shellquote"
)

// ArgvLines is a bwrap argv as --dry-run prints it: one option and its operands a
// line, shell-quoted, and everything from "--" on (the command) on the last line.
func ArgvLines(args []string) []string {
	var lines []string
	for i := 0; i < len(args); {
		n := 1 + arity[args[i]]
		if args[i] == "--" {
			n = len(args) - i
		}
		n = min(n, len(args)-i)
		q := make([]string, n)
		for j := range q {
			q[j] = shellquote.Quote(args[i+j])
		}
		lines = append(lines, strings.Join(q, " "))
		i += n
	}
	return lines
}

// arity is how many operands a bwrap option takes.
var arity = map[string]int{
	"--bind": 2, "--ro-bind": 2, "--dev-bind": 2, "--bind-try": 2, "--ro-bind-try": 2, "--symlink": 2, "--setenv": 2,
	"--cap-drop": 1, "--cap-add": 1, "--hostname": 1, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--dir": 1,
	"--chdir": 1, "--info-fd": 1, "--block-fd": 1, "--seccomp": 1, "--remount-ro": 1, "--uid": 1, "--gid": 1,
}
