package main

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
)

// A verb built alone (box run, box exec: loneVerb) is the same command as in the whole
// tree: the same help, flags and completions, and --version answers the same.
func TestLoneVerbSameAsTree(t *testing.T) {
	help := func(root *bytesRoot, args ...string) string {
		root.out.Reset()
		root.cmd.SetArgs(args)
		if err := root.cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return root.out.String()
	}
	for _, args := range [][]string{{"run", "--help"}, {"exec", "--help"}, {"--version"}} {
		full, alone := newBytesRoot(nil), newBytesRoot(loneVerb(args))
		if loneVerb(args) == nil {
			t.Fatalf("%v: not built alone", args)
		}
		if f, a := help(full, args...), help(alone, args...); f != a || f == "" {
			t.Errorf("%v: alone\n%s\nthe whole tree\n%s", args, a, f)
		}
	}
	var out bytes.Buffer // Main answers --version alone without any tree
	if code := Main([]string{"--version"}, nil, &out, &out); code != 0 || out.String() != help(newBytesRoot(nil), "--version") {
		t.Errorf("box --version: %d %q", code, out.String())
	}
	for _, args := range [][]string{{"-q", "run"}, {"help", "run"}, {"--version", "x"}, {"__complete", "run"}, {}} {
		if loneVerb(args) != nil {
			t.Errorf("%v: built alone; the whole tree must answer", args)
		}
	}
}

type bytesRoot struct {
	cmd interface {
		SetArgs([]string)
		Execute() error
	}
	out *bytes.Buffer
}

func newBytesRoot(only func(*env) *cobra.Command) *bytesRoot {
	var out bytes.Buffer
	return &bytesRoot{newRootFor(newEnv(nil, &out, &out), only), &out}
}
