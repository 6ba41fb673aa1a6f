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
		n := 1 + arity(args[i])
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

// arity is how many operands a bwrap option takes: a switch, not a map built at every
// start of box (issue 24).
func arity(opt string) int {
	switch opt {
	case "--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--symlink", "--setenv":
		return 2
	case "--cap-drop", "--cap-add", "--hostname", "--proc", "--dev", "--tmpfs", "--dir",
		"--chdir", "--info-fd", "--block-fd", "--seccomp", "--remount-ro", "--uid", "--gid":
		return 1
	}
	return 0
}
