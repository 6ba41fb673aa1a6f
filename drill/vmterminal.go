package drill

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
)

// VMTerminalStrings is the vm twin of kernel:terminal-strings: box exec in box, on a
// terminal, prints what a hostile box would to act beyond the screen (termStrings: a
// DCS like kitty's remote control, a kitty read of a host path, vim's and emacs's OSC
// 51), each with a nonce; the row is BREACH when any reaches the drill's terminal. The
// box's user is made first (as root, through c) where the box has none: a template
// without cloud-init (the lab's blank) makes none, and box exec runs as the user.
func VMTerminalStrings(ctx context.Context, c *incus.Client, run VerbRunner, box string) Result {
	r := Result{ID: "verbs:terminal-strings", Group: "verbs",
		Probe:   "box exec on a terminal: the box prints string sequences that act beyond the screen (kitty remote control, a host file read, vim's and emacs's OSC 51)",
		Targets: []string{box}, Expected: "dropped before your terminal"}
	seen, detail, err := vmTerminalStrings(ctx, c, run, box)
	return judged(r, Blocked, seen, detail, err)
}

func vmTerminalStrings(ctx context.Context, c *incus.Client, run VerbRunner, box string) (bool, string, error) {
	if run == nil {
		return false, "", errors.New("no way to run box exec")
	}
	inst, _, err := c.Instance(ctx, box)
	if err != nil {
		return false, "", err
	}
	user := shellQuote(incus.UserOf(*inst))
	if code, out, err := execSh(ctx, c, box, "id -u "+user+" >/dev/null 2>&1 || useradd --create-home "+user); err != nil || code != 0 {
		return false, "", fmt.Errorf("making the box's user %s: exit %d: %s %v", user, code, strings.TrimSpace(out), err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	nonce := hex.EncodeToString(b)
	var all []byte
	for _, s := range termStrings(nonce) {
		all = append(all, s...)
	}
	// The marker after them proves the output reached the terminal at all: a row that
	// saw nothing must not pass for one that filtered.
	mark := "box-drill-end-" + nonce
	out := run(ctx, []string{"exec", box, "--", "printf", "%s%s\\n", string(all), mark}, true)
	switch {
	case out.Err != nil:
		return false, "", fmt.Errorf("box exec %s: %w", box, out.Err)
	case out.Code != 0:
		return false, "", fmt.Errorf("box exec %s: exit %d: %s", box, out.Code, strings.TrimSpace(out.Stderr))
	case !bytes.Contains(out.Terminal, []byte(mark)):
		return false, "", fmt.Errorf("box exec %s: its output never reached the terminal (%q)", box, out.Terminal)
	}
	var reached []string
	for _, s := range termStrings(nonce) {
		if bytes.Contains(out.Terminal, s) {
			reached = append(reached, fmt.Sprintf("%q", s[:min(len(s), 12)]))
		}
	}
	if len(reached) > 0 {
		return true, "REACHED YOUR TERMINAL: " + strings.Join(reached, ", "), nil
	}
	return false, "none reached your terminal; the text after them did", nil
}
