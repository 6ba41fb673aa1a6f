package main

import (
	"bytes"
	"strings"
	"testing"
)

// A question answered with Ctrl-D ends its line: the refusal starts one of its own
// (field review, session 18: "[y/N] box: error: not deleted").
func TestAskEndOfInput(t *testing.T) {
	for in, want := range map[string]string{"": "box: delete it? [y/N] \n", "n\n": "box: delete it? [y/N] "} {
		var stderr bytes.Buffer
		e := newEnv(strings.NewReader(in), &bytes.Buffer{}, &stderr)
		e.stdinTTY = func() bool { return true }
		if err := ask(e, false, "delete it?", "not deleted"); err == nil || stderr.String() != want {
			t.Errorf("input %q: err %v, stderr %q, want %q", in, err, stderr.String(), want)
		}
	}
}
