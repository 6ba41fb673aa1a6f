package drill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/pty"
)

// What the runner's terminal received reaches a drill's stderr that is no terminal as
// plain lines: box's warnings and summary whole, the screen probe's marker and every
// escape sequence gone, whatever the chunks (field review, session 18).
func TestPassOnPlain(t *testing.T) {
	in := "box: warning: a/config holds a credential (x, in its value): the sandbox sees a copy without it\n" +
		"box-drill-screen-7d8df72802c7\x1b[8m\x1b(0\x1b[?1049h\x1b[?25l\x1b[0m\x1b[?47l\x1b[?25h\x1b[?1000l\x1b]0;title\x07\x1b(B\x0f\x1b7\x1b[r\x1b8" +
		"box: drill (profile default, tier none): 199 PASS, 29 SKIP\n\tindented\r\nno newline at the end"
	want := "box: warning: a/config holds a credential (x, in its value): the sandbox sees a copy without it\n" +
		"box: drill (profile default, tier none): 199 PASS, 29 SKIP\n\tindented\nno newline at the end\n"
	for _, chunk := range []int{1, 3, 7, len(in)} {
		f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		if err != nil {
			t.Fatal(err)
		}
		w := passOn(f)
		for s := in; s != ""; s = s[min(chunk, len(s)):] {
			w.Write([]byte(s[:min(chunk, len(s))]))
		}
		w.Flush()
		got, _ := os.ReadFile(f.Name())
		f.Close()
		if string(got) != want {
			t.Errorf("chunks of %d: got %q, want %q", chunk, got, want)
		}
	}
}

// A terminal gets it as it is: box's relay filtered it and reset the screen after.
func TestPassOnTerminal(t *testing.T) {
	m, s, err := pty.Open()
	if err != nil {
		t.Fatalf("no pty: %v", err)
	}
	defer m.Close()
	defer s.Close()
	if _, ok := passOn(s).(asIs); !ok {
		t.Errorf("a terminal's stderr is filtered")
	}
	if _, ok := passOn(&strings.Builder{}).(*plainLines); !ok {
		t.Errorf("a buffer's is not")
	}
}
