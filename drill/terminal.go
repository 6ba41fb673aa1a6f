package drill

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/internal/ttyfilter"
	"golang.org/x/sys/unix"
)

// KindHostTTY: inside, any fd on the terminal the drill gave box (Targets[0]: its
// device number) = seen; the detail says what it allowed (TIOCSTI, a reopen through
// /proc/self/fd). box relays a terminal of the sandbox's own, so none should be there.
const KindHostTTY Kind = "host-tty"

// hostTTYProbe is the row for the host's terminal device: the drill's pty is box's
// stderr, as a user's terminal is; the sandbox must see only a terminal of its own.
func hostTTYProbe(k Kernel) Probe {
	p := Probe{ID: "kernel:host-tty", Group: "kernel", Name: "the host's terminal from inside (TIOCSTI, reopen, /proc/self/fd)",
		Kind: KindHostTTY, Targets: []string{strconv.FormatUint(k.TerminalDev, 10)}, Want: Blocked, Expected: "not reachable: a terminal of its own"}
	if !k.Terminal || k.TerminalDev == 0 {
		p.Skip = "no terminal to test with"
	}
	return p
}

// probeHostTTY looks at every open fd for the host's terminal, and tries what an fd on
// it would allow: typing into it (TIOCSTI) and opening it again for writing.
func probeHostTTY(targets []string) (bool, string, error) {
	if len(targets) != 1 {
		return false, "", fmt.Errorf("want one device target")
	}
	dev, err := strconv.ParseUint(targets[0], 10, 64)
	if err != nil {
		return false, "", err
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false, "", err
	}
	var found []string
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != dev {
			continue
		}
		what := "fd " + e.Name()
		if r, err := unix.Open("/proc/self/fd/"+e.Name(), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(r)
			what += " reopened read-write"
		}
		// A space typed into the drill's own terminal: nothing reads its input.
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSTI, ' '); err == nil {
			what += ", TIOCSTI typed into it"
		} else {
			what += ", TIOCSTI refused (" + err.Error() + ")"
		}
		found = append(found, what)
	}
	if len(found) > 0 {
		return true, "the host's terminal is open inside: " + strings.Join(found, "; "), nil
	}
	return false, "no fd on the host's terminal; the sandbox's terminal is its own", nil
}

// KindTermStrings: inside, the string sequences terminals obey beyond the screen are
// written to the probe's terminal (Targets[0]: the nonce they carry); seen = they reached
// the drill's own terminal outside (SettleTermStrings).
const KindTermStrings Kind = "term-strings"

// termStringsProbe is the row for the relay's filter of string sequences: kitty's remote
// control (which runs host commands), DECUDK, kitty's graphics read from a host path, and
// OSC numbers outside the relay's list (vim's and emacs vterm's terminal API, OSC 51)
// reach the host's terminal only if box passes them.
func termStringsProbe(k Kernel, nonce string) Probe {
	p := Probe{ID: "kernel:terminal-strings", Group: "kernel", Name: "string sequences that act beyond the screen (kitty remote control, DECUDK, a host file read, vim's and emacs's OSC 51)",
		Kind: KindTermStrings, Targets: []string{nonce}, Want: Blocked, Expected: "dropped by the relay"}
	if !k.Terminal {
		p.Skip = "no terminal to test with"
	}
	return p
}

// termStrings are what the probe writes, each carrying the nonce, as an attacker would,
// but harmless should one reach a real terminal (a test build with the filter off): a
// DCS no terminal defines (box drops every DCS it does not know, kitty's "@kitty-cmd"
// and DECUDK's "|" alike), a kitty graphics query of a path that does not exist, with
// its answer suppressed (q=2), and a call through vim's terminal API (OSC 51, which
// emacs vterm obeys too) of a function no vim defines (an attacker's would be a
// ["drop","scp://HOST/x"], which has netrw run scp).
func termStrings(nonce string) [][]byte {
	path := base64.StdEncoding.EncodeToString([]byte("/nonexistent/box-drill-" + nonce))
	return [][]byte{
		[]byte("\x1bPbox-drill-" + nonce + "\x1b\\"),
		[]byte("\x1b_Ga=q,t=f,q=2;" + path + "\x1b\\"),
		[]byte("\x1b]51;[\"call\",\"Tapi_box_drill_" + nonce + "\",[]]\x07"),
	}
}

// probeTermStrings writes termStrings to stderr, the sandbox's terminal.
func probeTermStrings(targets []string) (bool, string, error) {
	if err := writeTerminal(targets, termStrings); err != nil {
		return false, "", err
	}
	return false, "wrote an unknown DCS, a kitty graphics read of a host path and a vim terminal API call (OSC 51) to its terminal", nil
}

// writeTerminal writes seqs of the nonce (targets' one) to stderr, which must be the
// sandbox's terminal.
func writeTerminal(targets []string, seqs func(nonce string) [][]byte) error {
	if len(targets) != 1 {
		return fmt.Errorf("want the nonce")
	}
	if _, err := unix.IoctlGetTermios(2, unix.TCGETS); err != nil {
		return fmt.Errorf("stderr is not a terminal: %v", err)
	}
	for _, s := range seqs(targets[0]) {
		if _, err := os.Stderr.Write(s); err != nil {
			return err
		}
	}
	return nil
}

// SettleTermStrings records, outside, whether any of the probe's sequences reached the
// drill's terminal (seen: what box wrote to it during the run).
func SettleTermStrings(obs []Observation, seen []byte, nonce string) []Observation {
	for i := range obs {
		if obs[i].ID != "kernel:terminal-strings" || obs[i].Err != "" {
			continue
		}
		var reached []string
		for _, s := range termStrings(nonce) {
			if bytes.Contains(seen, s) {
				reached = append(reached, fmt.Sprintf("%q", s[:min(len(s), 12)]))
			}
		}
		obs[i].OnHost = len(reached) > 0
		if obs[i].OnHost {
			obs[i].Detail += "; REACHED THE HOST'S TERMINAL: " + strings.Join(reached, ", ")
		} else {
			obs[i].Detail += "; none reached the host's terminal"
		}
	}
	return obs
}

// KindScreen: inside, the probe leaves its terminal's screen concealed (SGR 8), in the
// line-drawing character set, on the alternate screen and with the cursor hidden, as
// `printf '\033[8m\033(0'` would to hide what box prints next (the audit's report); seen
// = box printed no reset after it on the drill's terminal (SettleScreen).
const KindScreen Kind = "screen"

// screenProbe is the row for the screen state the sandbox leaves: the bwrap mode's relay
// and the Landlock mode (which shares the operator's terminal) both reset it at the end.
func screenProbe(k Kernel, nonce string) Probe {
	p := Probe{ID: "kernel:screen", Group: "kernel", Name: "the screen state the sandbox leaves (concealed text, line drawing, alternate screen) before box's report",
		Kind: KindScreen, Targets: []string{nonce}, Want: Blocked, Expected: "reset before box's report"}
	if !k.Terminal {
		p.Skip = "no terminal to test with"
	}
	return p
}

// screenSeq is what the screen probe writes: a marker carrying the nonce, then the
// sequences that hide what follows.
func screenSeq(nonce string) []byte {
	return []byte("box-drill-screen-" + nonce + "\x1b[8m\x1b(0\x1b[?1049h\x1b[?25l")
}

// probeScreen writes screenSeq to stderr, the sandbox's terminal.
func probeScreen(targets []string) (bool, string, error) {
	if err := writeTerminal(targets, func(nonce string) [][]byte { return [][]byte{screenSeq(nonce)} }); err != nil {
		return false, "", err
	}
	return false, "left its terminal concealed, in line drawing, on the alternate screen, cursor hidden", nil
}

// SettleScreen records, outside, whether box reset the screen (ttyfilter.Reset) on the
// drill's terminal after the probe's sequences last reached it (seen: what box wrote to
// it during the run). Sequences the relay dropped hid nothing.
func SettleScreen(obs []Observation, seen []byte, nonce string) []Observation {
	for i := range obs {
		if obs[i].ID != "kernel:screen" || obs[i].Err != "" {
			continue
		}
		marker := screenSeq(nonce)[:len("box-drill-screen-")+len(nonce)]
		at := bytes.LastIndex(seen, marker)
		switch {
		case at < 0:
			obs[i].Detail += "; never reached the host's terminal"
		case bytes.Contains(seen[at:], []byte(ttyfilter.Reset)):
			obs[i].Detail += "; box reset the screen after it"
		default:
			obs[i].OnHost = true
			obs[i].Detail += "; NOT RESET: what box printed next was hidden"
		}
	}
	return obs
}
