package bwrap

import (
	"bytes"
	"strings"
	"testing"
)

func TestOSCFilter(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"a\x1b]52;c;Y3VybCBldmlsfHNo\x07b", "ab"},
		{"a\x1b]52;c;Y3VybA==\x1b\\b", "ab"},
		{"a\x1b]5522;type=write\x1b\\b", "ab"},
		{"a\x1b]1337;File=name=eA==:AAAA\x07b", "ab"},
		{"a\x1b]50;#+1\x07b", "ab"},
		// Not dropped: titles, hyperlinks, cwd, colours, numbers that only start alike.
		{"\x1b]0;title\x07", "\x1b]0;title\x07"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"},
		{"\x1b]520;x\x07", "\x1b]520;x\x07"},
		{"\x1b]5;x\x07", "\x1b]5;x\x07"},
		{"\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m"},
		{"\x1b\x1b]52;c;x\x07z", "\x1bz"},
		// CAN cancels the string; an ESC inside starts a new sequence, which passes.
		{"\x1b]52;c;x\x18after", "after"},
		{"\x1b]52;c;x\x1b[1mbold", "\x1b[1mbold"},
		// tmux's passthrough: the inner clipboard write goes, the wrapper stays.
		{"\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\", "\x1bPtmux;\x1b\x1b\\"},
		{"end\x1b", "end"}, // held: the next read decides it
		// The number as terminals read it: leading zeros, a wrapping int, no ';' (a
		// hostile review passed "\x1b]052;" to kitty's and xterm's clipboard).
		{"a\x1b]052;c;eA==\x07b", "ab"},
		{"a\x1b]00052;c;eA==\x07b", "ab"},
		{"a\x1b]0000000000052;c;eA==\x07b", "ab"},
		{"a\x1b]4294967348;c;eA==\x07b", "ab"},
		{"a\x1b]01337;File=x\x07b", "ab"},
		{"a\x1b]52:c;eA==\x07b", "ab"},
		{"a\x1b]5113;ac=send\x1b\\b", "ab"},
		{"a\x1b]" + strings.Repeat("0", 40) + "52;c;eA==\x07b", "ab"},
		{"\x1b]00;t\x07", ""},
		// The 8-bit OSC, raw and in UTF-8 (U+009D): the same rules.
		{"a\x9d52;c;eA==\x07b", "ab"},
		{"a\xc2\x9d52;c;eA==\x1b\\b", "a\xc2b"},
		{"a\xc2\x9d052;c;eA==\x07b", "a\xc2b"},
		{"\x9d0;title\x07", "\x9d0;title\x07"},
		// UTF-8 text with 0x9d in it passes (the right double quote, U+045D).
		{"\u201cq\u201d and \u045d.", "\u201cq\u201d and \u045d."},
		{"\x1b]0;title\u201d\x07", "\x1b]0;title\u201d\x07"},
	}
	for _, c := range cases {
		// Every way of cutting the input into two reads gives the same output.
		for cut := 0; cut <= len(c.in); cut++ {
			var f oscFilter
			got := f.filter(nil, []byte(c.in[:cut]))
			got = f.filter(got, []byte(c.in[cut:]))
			if string(got) != c.want {
				t.Errorf("%q cut at %d: got %q, want %q", c.in, cut, got, c.want)
				break
			}
		}
		// And byte by byte.
		var f oscFilter
		var got []byte
		for i := 0; i < len(c.in); i++ {
			got = f.filter(got, []byte{c.in[i]})
		}
		if string(got) != c.want {
			t.Errorf("%q byte by byte: got %q, want %q", c.in, got, c.want)
		}
	}
}

// A dropped sequence never terminated swallows at most oscMaxDrop bytes.
func TestOSCFilterBounded(t *testing.T) {
	var f oscFilter
	in := "\x1b]52;c;" + strings.Repeat("A", oscMaxDrop+100) + "visible"
	got := f.filter(nil, []byte(in))
	if !bytes.HasSuffix(got, []byte("visible")) || len(got) > 200 {
		t.Errorf("got %d bytes ending %q", len(got), got[max(0, len(got)-20):])
	}
}

func BenchmarkOSCFilter(b *testing.B) {
	src := bytes.Repeat([]byte("some output \x1b[32mgreen\x1b[0m and more text here\n"), 1500)
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		var f oscFilter
		dst = f.filter(dst[:0], src)
	}
}

func BenchmarkOSCFilterPlain(b *testing.B) {
	src := bytes.Repeat([]byte("some output without escapes, plain text here\n"), 1500)
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		var f oscFilter
		dst = f.filter(dst[:0], src)
	}
}
