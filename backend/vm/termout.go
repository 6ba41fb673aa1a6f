package vm

import (
	"io"
	"os"

	"github.com/heavy-duty/box/internal/ttyfilter"
	"golang.org/x/term"
)

// ProtTTYFilter: the box's output reaches your terminal through internal/ttyfilter (off,
// a test build: straight, as before).
const ProtTTYFilter = "vm-ttyfilter"

// terminalOut is w as a box's output may reach it. A terminal obeys more than text: a
// box printing OSC 52 would set your clipboard, OSC 51 have vim or emacs run ssh or scp
// as you, a DCS drive kitty's remote control; so on a terminal the output passes the
// filter bwrap's relay uses. Anything else (a file, a pipe) gets the bytes unchanged.
func terminalOut(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !protectionOff(ProtTTYFilter) {
		return ttyfilter.NewWriter(f)
	}
	return w
}
