package acceptloop

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestBackoff(t *testing.T) {
	var b Backoff
	if !b.First() {
		t.Fatal("a new Backoff is not at its first")
	}
	var got []time.Duration
	for range 10 {
		got = append(got, b.Next())
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if !b.First() || b.Next() != 5*time.Millisecond {
		t.Error("Reset does not start over")
	}
}

func TestExhausted(t *testing.T) {
	for _, err := range []error{unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM, fmt.Errorf("accept: %w", os.NewSyscallError("accept4", unix.EMFILE))} {
		if !Exhausted(err) {
			t.Errorf("%v: not exhausted", err)
		}
	}
	for _, err := range []error{unix.ECONNABORTED, unix.EINTR, os.ErrClosed, nil} {
		if Exhausted(err) {
			t.Errorf("%v: exhausted", err)
		}
	}
}
