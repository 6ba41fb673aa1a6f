package vm

import (
	"strings"

	"github.com/heavy-duty/box/internal/shellquote"
)

// CommandLine is the hatch's incus arguments as a shell would take them, for the line
// box prints before it runs incus.
func (h *Hatch) CommandLine() string {
	q := make([]string, len(h.Args))
	for i, a := range h.Args {
		q[i] = shellquote.Quote(a)
	}
	return strings.Join(q, " ")
}
