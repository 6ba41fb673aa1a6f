package vm

import "testing"

// What box prints is what a shell would run: a space, a quote, an empty word survive.
func TestHatchCommandLine(t *testing.T) {
	h := &Hatch{Args: []string{"config", "set", "work", "user.note", "it's a box", ""}}
	if got, want := h.CommandLine(), `config set work user.note 'it'\''s a box' ''`; got != want {
		t.Errorf("CommandLine: %s, want %s", got, want)
	}
}
