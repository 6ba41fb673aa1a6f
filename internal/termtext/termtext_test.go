package termtext

import "testing"

func TestEscape(t *testing.T) {
	for _, c := range []struct {
		in        string
		keepLines bool
		want      string
	}{
		{"plain é", false, "plain é"},
		{"a\nb\tc", false, `a\nb\tc`},
		{"a\nb\tc", true, "a\nb\tc"},
		{"\x1b]0;T\x07\u009b" + string([]byte{0x9b}) + "\x7f", true, `\x1b]0;T\x07\x9b\ufffd\x7f`},
	} {
		if got := Escape(c.in, c.keepLines); got != c.want {
			t.Errorf("Escape(%q, %v) = %q, want %q", c.in, c.keepLines, got, c.want)
		}
	}
}
