// Package termtext makes text that may come from a sandbox (a file name, a git config
// value, an error quoting either) safe to print on the operator's terminal: control
// characters are shown escaped, never sent, so an escape sequence cannot set the title,
// clear the screen or write the clipboard (OSC 52).
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape shows C0 controls, DEL, C1 controls and invalid UTF-8 in s as \xNN (\ufffd for
// a byte that is not UTF-8). Newline and tab are \n and \t unless keepLines, where they
// pass (an error's own line breaks).
func Escape(s string, keepLines bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unsafe(r, keepLines) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafe(r, keepLines):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		default:
			fmt.Fprintf(&b, `\x%02x`, r)
		}
	}
	return b.String()
}

func unsafe(r rune, keepLines bool) bool {
	if r == '\n' || r == '\t' {
		return !keepLines
	}
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == utf8.RuneError
}
