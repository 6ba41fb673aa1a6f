package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/envaudit"
)

func TestCheckCommand(t *testing.T) {
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(wd, "plain.txt"), []byte("x\n"), 0o644)
	os.Mkdir(filepath.Join(wd, "dir"), 0o755)
	tool := filepath.Join(wd, "mytool")
	os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755)
	plan := func(cmd ...string) *Plan {
		return &Plan{
			Vars: []envaudit.Var{{Name: "PATH", Value: SandboxPATH(nil, false)}},
			Spec: Spec{Workdir: wd, Home: "/home/u", Command: cmd, Tools: []Tool{{Name: "mytool", Path: tool}}},
		}
	}
	for _, c := range []struct {
		cmd  string
		code int // 0: let it run
	}{
		{"sh", 0}, {"/bin/sh", 0}, {"./run.sh", 0}, {wd + "/run.sh", 0}, {"mytool", 0},
		{"./missing", ExitNotFound}, {"/usr/bin/no-such-binary-here", ExitNotFound},
		{"./plain.txt", ExitNotExecutable}, {"./dir", ExitNotExecutable},
		{"no-such-command-here", ExitNotFound},
		// Paths box cannot see from outside are the sandbox's to answer.
		{"/home/u/bin/tool", 0}, {"/tmp/x", 0}, {"/nix/store/x/bin/y", 0},
	} {
		err := plan(c.cmd).CheckCommand()
		var ce *CommandError
		switch {
		case c.code == 0 && err != nil:
			t.Errorf("%s: refused: %v", c.cmd, err)
		case c.code != 0 && !errors.As(err, &ce):
			t.Errorf("%s: %v, want a CommandError", c.cmd, err)
		case c.code != 0 && ce.Code() != c.code:
			t.Errorf("%s: code %d, want %d", c.cmd, ce.Code(), c.code)
		}
	}
}
