package bwrap

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunBridgesStreams: streams that are not files reach the command and come back
// whole, and the exit code is the command's. /bin/sh stands in for bwrap: Run's contract
// with its program is argv, env, stdio and the info fd.
func TestRunBridgesStreams(t *testing.T) {
	var out, errb bytes.Buffer
	code, err := Run(Launch{
		Bwrap: "/bin/sh",
		Args:  []string{"-c", `printf '{"child-pid": 1}' >&3; cat; echo "env=$BOXTEST" >&2; exit 5`},
		Env:   []string{"BOXTEST=yes"},
		Stdin: strings.NewReader("hello through a pipe\n"), Stdout: &out, Stderr: &errb,
	})
	if err != nil || code != 5 {
		t.Fatalf("Run = %d, %v; want 5, nil", code, err)
	}
	if out.String() != "hello through a pipe\n" || errb.String() != "env=yes\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

// TestRunFailsClosed: when BeforeRelease fails, the launcher is killed and the command
// behind the block fd never runs.
func TestRunFailsClosed(t *testing.T) {
	var out bytes.Buffer
	code, err := Run(Launch{
		Bwrap:  "/bin/sh",
		Args:   []string{"-c", `printf '{"child-pid": 1}' >&3; exec 3>&-; read x <&4; echo RELEASED`},
		Stdout: &out,
		BeforeRelease: func(int) (func(), error) {
			return nil, errTest
		},
	})
	if err != errTest || code == 0 {
		t.Fatalf("Run = %d, %v; want an error", code, err)
	}
	if strings.Contains(out.String(), "RELEASED") {
		t.Error("the command ran although setup failed")
	}
}

type testErr struct{}

func (testErr) Error() string { return "setup failed" }

var errTest error = testErr{}
