package pty

import (
	"testing"

	"golang.org/x/term"
)

func TestOpen(t *testing.T) {
	m, s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer s.Close()
	if !term.IsTerminal(int(s.Fd())) {
		t.Error("the slave is not a terminal")
	}
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if n, err := m.Read(buf); n != 1 || buf[0] != 'x' {
		t.Errorf("master read %q, %v", buf[:n], err)
	}
}
