package vm_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill"
)

// A hostile box's terminal output, on a real pseudo-terminal, against a real incusd: it
// prints OSC 52 (set the operator's clipboard) and OSC 51 (vim's terminal API: netrw
// runs scp as the operator) with a nonce, in box shell and in box exec (stdout and
// stderr). The host's terminal sees the text, never the sequences; with the filter
// switched off (BOX_UNSAFE_OFF=vm-ttyfilter, a boxunsafe build) it sees both, which is
// what the test shows first so it cannot pass by seeing nothing.
func TestVMTerminalFilterLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	r := newVMRig(t)
	r.ok(t, "new", "--name", "tf", "--container")
	r.rootExec("tf", "useradd", "--create-home", "--shell", "/bin/bash", "dev") // the lab image's blank has none
	nonce := fmt.Sprintf("n%d", time.Now().UnixNano())
	// printf makes the ESC bytes in the box: the typed line the terminal echoes holds
	// only backslashes, and "b-42" (from 40+2) is printf's output, not the echo.
	script := `printf 'a\033]52;c;` + nonce + `\007\033]51;["drop","scp://h/` + nonce + `"]\007b-%s\n' $((40+2))`
	seen := func(out string) []string {
		var got []string
		for _, seq := range []string{"\x1b]52;c;" + nonce, "\x1b]51;[\"drop\",\"scp://h/" + nonce} {
			if strings.Contains(out, seq) {
				got = append(got, fmt.Sprintf("%q", seq))
			}
		}
		return got
	}
	shell := func(t *testing.T, env []string) string {
		s := startOnPty(t, r, env, "shell", "tf")
		s.send(script + "\r")
		s.expect("b-42")
		s.send("exit\r")
		if code := s.exit(); code != 0 {
			t.Fatalf("box shell: exit %d; %q", code, s.out.String())
		}
		return s.out.String()
	}
	execOut := func(t *testing.T, env []string, redirect string) string {
		s := startOnPty(t, r, env, "exec", "tf", "--", "/bin/sh", "-c", script+redirect)
		if code := s.exit(); code != 0 {
			t.Fatalf("box exec: exit %d; %q", code, s.out.String())
		}
		if !strings.Contains(s.out.String(), "b-42") {
			t.Fatalf("box exec printed no b-42: %q", s.out.String())
		}
		return s.out.String()
	}

	t.Run("with the filter off, the host's terminal gets both sequences", func(t *testing.T) {
		saved := r.box
		r.box = unsafeBoxBinary(t)
		defer func() { r.box = saved }()
		off := []string{"BOX_UNSAFE_OFF=vm-ttyfilter"}
		for name, out := range map[string]string{"shell": shell(t, off), "exec": execOut(t, off, ""), "exec stderr": execOut(t, off, " >&2")} {
			if got := seen(out); len(got) != 2 {
				t.Errorf("box %s with the filter off: the terminal saw %v of both; it showed %q", name, got, out)
			}
		}
	})
	t.Run("box shell and box exec: the host's terminal gets the text only", func(t *testing.T) {
		for name, out := range map[string]string{"shell": shell(t, nil), "exec": execOut(t, nil, ""), "exec stderr": execOut(t, nil, " >&2")} {
			if got := seen(out); len(got) != 0 {
				t.Errorf("box %s: the operator's terminal received %v from the box", name, got)
			}
			if !strings.Contains(out, "ab-42") {
				t.Errorf("box %s: the text around the sequences is lost: %q", name, out)
			}
		}
	})
}

// The drill's terminal row: PASS with box as built, BREACH when box is built with the
// vm backend's filter switched off (BOX_UNSAFE_OFF=vm-ttyfilter).
func TestVMDrillTerminalRowLive(t *testing.T) {
	t.Parallel() // its own lab: see live_test.go
	r := newVMRig(t)
	r.ok(t, "new", "--name", "tr", "--container") // no user yet: the row makes it
	row := drill.VMTerminalStrings(r.ctx, r.client, drill.BinaryRunner(r.box, r.env), "tr")
	t.Logf("as built: %s (%s)", row.Status, row.Observed)
	if row.Status != drill.Pass {
		t.Errorf("as built: %s (%s), want PASS", row.Status, row.Observed)
	}
	env := append(append([]string{}, r.env...), "BOX_UNSAFE_OFF=vm-ttyfilter")
	row = drill.VMTerminalStrings(r.ctx, r.client, drill.BinaryRunner(unsafeBoxBinary(t), env), "tr")
	t.Logf("filter off: %s (%s)", row.Status, row.Observed)
	if row.Status != drill.Breach {
		t.Errorf("filter off: %s (%s), want BREACH", row.Status, row.Observed)
	}
}
