package drill

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"sync"

	"golang.org/x/sys/unix"
)

// passOn is where the probe runner's terminal output goes on: the drill's stderr as it is
// when that is a terminal (box's relay has filtered it, and box resets the screen after
// the screen probe), else plain lines (plainLines). Field review, session 18: `box drill
// 2>file` wrote the screen probe's marker and escape sequences into the file.
func passOn(stderr io.Writer) interface {
	io.Writer
	Flush()
} {
	if f, ok := stderr.(*os.File); ok {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			return asIs{stderr}
		}
	}
	return &plainLines{w: stderr}
}

type asIs struct{ io.Writer }

func (asIs) Flush() {}

// plainLines passes on whole lines without escape sequences, other control characters
// (but the tab) or the screen probe's marker; Flush ends a last unfinished line. A line
// longer than plainMax is passed on in pieces.
type plainLines struct {
	w    io.Writer
	line []byte
}

const plainMax = 64 << 10

func (p *plainLines) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			if len(p.line) > plainMax {
				p.Flush()
			}
			break
		}
		p.line = append(p.line, b[:i]...)
		b = b[i+1:]
		p.Flush()
	}
	return n, nil
}

// Flush writes the line held, as plain text, with its newline (nothing when it held
// nothing but what is dropped).
func (p *plainLines) Flush() {
	if len(p.line) == 0 {
		return
	}
	text := screenMarker().ReplaceAll(escSeq().ReplaceAll(p.line, nil), nil)
	text = bytes.TrimRight(bytes.Map(func(r rune) rune {
		if r < ' ' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, text), " \t\r")
	p.line = p.line[:0]
	if len(text) > 0 {
		p.w.Write(append(text, '\n'))
	}
}

// Compiled when first used: every verb pays a package-level regexp's compile at start-up.
var (
	// escSeq is an escape sequence: CSI (parameters, final byte), a string sequence (OSC,
	// DCS, SOS, PM, APC, to BEL or ST), a character-set designation, or a two-byte one.
	escSeq = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b]*(\x07|\x1b\\)?|[()*+][ -~]|[ -~])`)
	})
	// screenMarker is the screen probe's marker (screenSeq).
	screenMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`box-drill-screen-[0-9a-f]+`) })
)
