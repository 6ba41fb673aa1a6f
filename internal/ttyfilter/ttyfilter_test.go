package ttyfilter

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
		{"\x1b]5;x\x07", "\x1b]5;x\x07"},
		{"\x1b]104\x07", "\x1b]104\x07"},
		{"\x1b]11;?\x1b\\", "\x1b]11;?\x1b\\"},
		// A number not on the list is dropped (vim's and emacs vterm's terminal API,
		// xterm's X property and log file, a number that only starts like an allowed one).
		{"a\x1b]51;[\"drop\",\"scp://h/x\"]\x07b", "ab"},
		{"a\x1b]51;Efind-file \"/ssh:h:\"\x1b\\b", "ab"},
		{"a\x1b]3;WM_COMMAND=id\x07b", "ab"},
		{"a\x1b]46;/tmp/log\x07b", "ab"},
		{"a\x1b]520;x\x07b", "ab"},
		{"a\x1b]51:[\"call\"]\x07b", "ab"},
		{"a\x1b]3\x07b", "ab"},
		// After 0x9d (a right quote's last byte), a number off the list is text unless ';' follows.
		{"\u201d3 apples", "\u201d3 apples"},
		// OSC 9: a notification and a progress bar pass, ConEmu's commands do not.
		{"\x1b]9;done\x07", "\x1b]9;done\x07"},
		{"\x1b]9;4;1;50\x07", "\x1b]9;4;1;50\x07"},
		{"\x1b]9;4\x07", "\x1b]9;4\x07"},
		{"\x1b]9;\x07", "\x1b]9;\x07"},
		{"a\x1b]9;7;\"calc\"\x07b", "ab"},
		{"a\x1b]9;6;\"Shell()\"\x1b\\b", "ab"},
		{"a\x1b]9;44;x\x07b", "ab"},
		{"a\x1b]9;7\x07b", "ab"},
		// OSC 777: only the notification.
		{"\x1b]777;notify;t;b\x07", "\x1b]777;notify;t;b\x07"},
		{"a\x1b]777;tabbed;x\x07b", "ab"},
		{"a\x1b]777;noti\x07b", "ab"},
		// A long notification is decided within oscMaxPayload and passes whole.
		{"\x1b]9;" + strings.Repeat("n", 40) + "\x07", "\x1b]9;" + strings.Repeat("n", 40) + "\x07"},
		{"\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m"},
		{"\x1b\x1b]52;c;x\x07z", "\x1bz"},
		// CAN cancels the string; an ESC inside starts a new sequence, which passes.
		{"\x1b]52;c;x\x18after", "after"},
		{"\x1b]52;c;x\x1b[1mbold", "\x1b[1mbold"},
		// tmux's passthrough hands what it wraps to the terminal outside: dropped whole
		// (the DCS rows below), and what a terminal without tmux reads after the inner
		// ESC is filtered as any sequence is.
		{"\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\", "\x1b\x1b\\"},
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
	cases = append(cases, stringSequenceCases...)
	for _, c := range cases {
		// Every way of cutting the input into two reads gives the same output.
		for cut := 0; cut <= len(c.in); cut++ {
			var f Filter
			got := f.Append(nil, []byte(c.in[:cut]))
			got = f.Append(got, []byte(c.in[cut:]))
			if string(got) != c.want {
				t.Errorf("%q cut at %d: got %q, want %q", c.in, cut, got, c.want)
				break
			}
		}
		// And byte by byte.
		var f Filter
		var got []byte
		for i := 0; i < len(c.in); i++ {
			got = f.Append(got, []byte{c.in[i]})
		}
		if string(got) != c.want {
			t.Errorf("%q byte by byte: got %q, want %q", c.in, got, c.want)
		}
	}
}

// The DCS, APC, PM and SOS sequences (a hostile review): kitty's remote control, xterm's
// user-defined keys, iTerm2's tmux integration, tmux's passthrough and kitty's graphics
// read from a host path are dropped; what box knows to be harmless passes; UTF-8 text
// whose characters hold the 8-bit introducers' bytes passes.
var stringSequenceCases = []struct{ in, want string }{
	// kitty's remote control: with allow_remote_control yes, launch runs on the host.
	{"a\x1bP@kitty-cmd{\"cmd\":\"launch\",\"version\":[0,26,0],\"payload\":{\"args\":[\"sh\",\"-c\",\"id>/tmp/p\"]}}\x1b\\b", "ab"},
	// DECUDK: Shift+F6 would type "rm -rf ~" and Enter into your shell after the run.
	{"a\x1bP0|17/726d202d7266207e0d\x1b\\b", "ab"},
	{"a\x1bP1;1|23/6964\x1b\\b", "ab"},
	{"a\x1bP+p6b6631=1b\x1b\\b", "ab"},         // XTSETTCAP
	{"a\x1bP1000p%begin 1 1 0\n\x1b\\b", "ab"}, // iTerm2's tmux integration
	{"a\x1bP1$t1;2\x1b\\b", "ab"},              // DECRSTS
	{"a\x1bPtmux;\x1b\x1bP@kitty-cmd{}\x1b\x1b\\\x1b\\b", "a\x1b\x1b\x1b\\\x1b\\b"},
	{"a\x1bP" + strings.Repeat("1;", 100) + "q#0\x1b\\b", "ab"}, // a header past the bound
	{"a\x1bP\x07b", "ab"},
	{"a\x1bP\x1b[1mb", "a\x1b[1mb"},
	// Passed: sixel, DECRQSS, XTGETTCAP, the synchronized update.
	{"\x1bPq#0;2;0;0;0#0!6~\x1b\\", "\x1bPq#0;2;0;0;0#0!6~\x1b\\"},
	{"\x1bP0;1;0q#0~\x1b\\", "\x1bP0;1;0q#0~\x1b\\"},
	{"\x1bP$qm\x1b\\", "\x1bP$qm\x1b\\"},
	{"\x1bP+q544e\x1b\\", "\x1bP+q544e\x1b\\"},
	{"\x1bP=1s\x1b\\x\x1bP=2s\x1b\\", "\x1bP=1s\x1b\\x\x1bP=2s\x1b\\"},
	// kitty's graphics: in the sequence passes; from a host path, file or shm does not.
	{"\x1b_Ga=T,f=100;iVBORw0K\x1b\\", "\x1b_Ga=T,f=100;iVBORw0K\x1b\\"},
	{"\x1b_Gt=d,a=T;AAAA\x1b\\", "\x1b_Gt=d,a=T;AAAA\x1b\\"},
	{"\x1b_Ga=q,i=1\x1b\\", "\x1b_Ga=q,i=1\x1b\\"},
	{"a\x1b_Ga=T,t=f;L2hvbWUvdS8uc3NoL2lkX2VkMjU1MTk=\x1b\\b", "ab"},
	{"a\x1b_Gt=t,a=T;L3RtcC94\x1b\\b", "ab"},
	{"a\x1b_Ga=T,t=s;L3g=\x1b\\b", "ab"},
	{"a\x1b_Gt=f\x1b\\b", "ab"},
	{"a\x1b_Gtt=d;x\x1b\\b", "ab"}, // malformed: dropped
	{"a\x1b_Hello\x1b\\b", "ab"},   // not kitty's graphics
	{"a\x1b^pm\x1b\\b", "ab"},      // PM
	{"a\x1bXsos\x1b\\b", "ab"},     // SOS
	// The 8-bit introducers: raw where no UTF-8 character continues, and encoded.
	{"a\x90@kitty-cmd{}\x1b\\b", "ab"},
	{"a\x9fGt=f;eA==\x1b\\b", "ab"},
	{"a\x9ex\x1b\\b", "ab"},
	{"a\x98x\x1b\\b", "ab"},
	{"a\xc2\x90@kitty-cmd{}\x1b\\b", "a\xc2b"},
	{"a\xc2\x9fGt=f;eA==\x1b\\b", "a\xc2b"},
	{"\xc2\x90$qm\x1b\\", "\xc2\x90$qm\x1b\\"},
	// Text holding those bytes inside characters: Cyrillic, quotes, arrows, an emoji.
	{"\u0410\u0418\u041e\u041f \u2018q\u201e \u2190 \U0001F610 \u00d0.", "\u0410\u0418\u041e\u041f \u2018q\u201e \u2190 \U0001F610 \u00d0."},
	{"\x1b[1m\u0410\x1b[0m\u041f", "\x1b[1m\u0410\x1b[0m\u041f"},
	// A continuation byte past what its lead announced is a control again.
	{"\xd0\x90\x90@kitty-cmd{}\x1b\\b", "\xd0\x90b"},
}

// With the allowlist off (a test build's osc-allowlist), the filter is what it was: an
// OSC outside droppedOSC passes, which is what the drill's BREACH shows; droppedOSC still
// goes.
func TestOSCFilterDenyOnly(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\x1b]51;[\"call\",\"Tapi_x\",[]]\x07b", "a\x1b]51;[\"call\",\"Tapi_x\",[]]\x07b"},
		{"a\x1b]9;7;\"calc\"\x07b", "a\x1b]9;7;\"calc\"\x07b"},
		{"a\x1b]52;c;eA==\x07b", "ab"},
	} {
		f := Filter{DenyOnly: true}
		if got := string(f.Append(nil, []byte(c.in))); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

// A dropped sequence never terminated swallows at most oscMaxDrop bytes.
func TestOSCFilterBounded(t *testing.T) {
	var f Filter
	in := "\x1b]52;c;" + strings.Repeat("A", oscMaxDrop+100) + "visible"
	got := f.Append(nil, []byte(in))
	if !bytes.HasSuffix(got, []byte("visible")) || len(got) > 200 {
		t.Errorf("got %d bytes ending %q", len(got), got[max(0, len(got)-20):])
	}
}

func BenchmarkOSCFilter(b *testing.B) {
	src := bytes.Repeat([]byte("some output \x1b[32mgreen\x1b[0m and more text here\n"), 1500)
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		var f Filter
		dst = f.Append(dst[:0], src)
	}
}

func BenchmarkOSCFilterPlain(b *testing.B) {
	src := bytes.Repeat([]byte("some output without escapes, plain text here\n"), 1500)
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		var f Filter
		dst = f.Append(dst[:0], src)
	}
}

// TestResetKeepsCursor: Reset never moves the cursor (field review, session 18: its
// origin-mode reset homed it, and the next prompt overwrote the top of the screen after
// every run), and resets the scroll region only between a save and a restore of it.
func TestResetKeepsCursor(t *testing.T) {
	if strings.Contains(Reset, "\x1b[?6l") || strings.Contains(Reset, "\x1b[?6h") {
		t.Errorf("Reset sets origin mode, which homes the cursor: %q", Reset)
	}
	if !strings.HasSuffix(Reset, "\x1b7\x1b[r\x1b8") || strings.Count(Reset, "\x1b[r") != 1 {
		t.Errorf("Reset does not reset the scroll region between ESC 7 and ESC 8 at its end: %q", Reset)
	}
}
