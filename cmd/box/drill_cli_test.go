package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The drill's CLI refusals, in process (the live drill tests are in drill/).
func TestDrillBackendVM(t *testing.T) {
	// Never the machine's own incusd: a socket that does not exist. (The vm drill runs
	// for real against the lab's incusd in host/hoststack_test.go.)
	sock := filepath.Join(t.TempDir(), "no-incusd.socket")
	t.Setenv("INCUS_SOCKET", sock)
	var o, e bytes.Buffer
	code := Main([]string{"drill", "--backend", "vm"}, strings.NewReader(""), &o, &e)
	if code != 1 || !strings.Contains(e.String(), sock) || !strings.Contains(e.String(), "box: hint:") {
		t.Errorf("exit %d: %s", code, e.String())
	}
	for _, args := range [][]string{{"drill", "--expect", "lan"}, {"drill", "--lan", "nope"}, {"drill", "--internet-url", "ftp://x"}, {"drill", "extra"}} {
		e.Reset()
		if code := Main(args, strings.NewReader(""), &o, &e); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, e.String())
		}
	}
	// The vm drill's LAN targets may be names, but not without a port (drill.VMDrill.Check).
	e.Reset()
	code = Main([]string{"drill", "--backend", "vm", "--lan", "nope"}, strings.NewReader(""), &o, &e)
	if want := "box: error: --lan \"nope\": want ADDR:PORT\nbox: hint: for example --lan 192.168.1.10:80\n"; code != 2 || e.String() != want {
		t.Errorf("--backend vm --lan nope: exit %d:\n%s\nwant exit 2:\n%s", code, e.String(), want)
	}
}
