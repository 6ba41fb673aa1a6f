package drill

import (
	"fmt"
	"os"
	"strconv"
	"strings"

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
