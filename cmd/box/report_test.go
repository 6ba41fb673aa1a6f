package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/errs"
)

// An error quoting a name the sandbox chose cannot drive the operator's terminal: a file
// in a box's home named with OSC and CSI sequences (review finding, session 4).
func TestReportEscapesControls(t *testing.T) {
	var b bytes.Buffer
	name := "home/x/\x1b]0;PWNED\x07\x1b[2J\u009b31m" + string([]byte{0x9b}) + "RED"
	report(&b, errs.WithHint(errors.New("open "+name+": permission denied"), "remove "+name+"\nthen retry"))
	out := b.String()
	for _, c := range []string{"\x1b", "\x07", "\u009b", string([]byte{0x9b})} {
		if strings.Contains(out, c) {
			t.Errorf("control %q reached the terminal: %q", c, out)
		}
	}
	for _, want := range []string{`box: error: open home/x/\x1b]0;PWNED\x07\x1b[2J\x9b31m\ufffdRED: permission denied`, "box: hint: remove home/x/", "box: hint: then retry"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if got := termSafe("plain\tline\nnext é"); got != "plain\tline\nnext é" {
		t.Errorf("termSafe changed plain text: %q", got)
	}
}
