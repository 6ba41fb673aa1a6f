package bwrap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/heavy-duty/box/internal/pty"
	"golang.org/x/sys/unix"
)

// TestRelayPumpOrder: the output pump's reader and writer (two goroutines, buffers
// between them) hand the host terminal every byte the sandbox wrote, in order, filtered
// as one stream: 2 MiB of numbered lines through a real pty, with OSC 52 sequences to
// drop and colours to keep at offsets that fall across reads and buffers. Under -race it
// also catches a buffer handed back to the reader before the writer is done with it.
func TestRelayPumpOrder(t *testing.T) {
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// Raw, so the bytes the sandbox writes are the bytes the master reads.
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := &relay{in: -1, out: pw, master: m, slave: s, outDone: make(chan struct{})}

	var sent, want bytes.Buffer
	for i := 0; sent.Len() < 2<<20; i++ {
		line := fmt.Sprintf("line %07d \x1b[31mred\x1b[0m\n", i)
		sent.WriteString(line)
		want.WriteString(line)
		if i%97 == 0 {
			sent.WriteString("\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07") // dropped
		}
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- b
	}()
	go r.pumpOut()
	if _, err := s.Write(sent.Bytes()); err != nil {
		t.Fatal(err)
	}
	s.Close() // the sandbox's last process is gone: the pump reads to the end, then EIO
	<-r.outDone
	pw.Close()
	b := <-got
	if !bytes.Equal(b, want.Bytes()) {
		i := 0
		for i < len(b) && i < want.Len() && b[i] == want.Bytes()[i] {
			i++
		}
		t.Fatalf("host terminal got %d bytes, want %d; first difference at %d: %q", len(b), want.Len(), i, b[i:min(len(b), i+40)])
	}
}
