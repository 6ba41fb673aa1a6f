package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every vm verb takes --remote (vm.RemoteVerbs is looked up by name, so a new verb
// must be added there), and so do setup-host and doctor; the local-only host verbs
// and box run do not.
func TestRemoteFlagOnEveryVMVerb(t *testing.T) {
	root := newRoot(newEnv(nil, nil, nil))
	for _, cmd := range root.Commands() {
		has := cmd.Flags().Lookup("remote") != nil
		want := cmd.GroupID == groupVM || cmd.Name() == "setup-host" || cmd.Name() == "doctor"
		if has != want {
			t.Errorf("box %s: --remote %t, want %t", cmd.Name(), has, want)
		}
		if (cmd.Flags().Lookup("target") != nil) != (cmd.Name() == "new") {
			t.Errorf("box %s: --target only on new", cmd.Name())
		}
	}
}

// REMOTE:NAME is taken off box arguments only: never off a file, a label, a command.
func TestRemotePrefixesRewriteOnlyBoxArguments(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		remote string
		want   string // the box arguments after the rewrite, space-joined
	}{
		{[]string{"exec", "lab:work", "--", "echo", "a:b"}, "lab", "work -- echo a:b"},
		{[]string{"info", "work"}, "", "work"},
		{[]string{"rename", "lab:a", "lab:b"}, "lab", "a b"},
		{[]string{"rename", "lab:a", "b"}, "lab", "a b"},
		{[]string{"export", "lab:work", "out:file.tar"}, "lab", "work out:file.tar"},
		{[]string{"snapshot", "lab:work", "x"}, "lab", "work x"},
		{[]string{"restore", "--remote", "lab", "lab:work", "s"}, "lab", "work s"},
	} {
		e := newEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		e.getenv = func(string) string { return "" }
		root := newRoot(e)
		cmd, rest, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatal(err)
		}
		args := cmd.Flags().Args()
		if err := e.remotePrefixes(cmd, args); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := strings.Join(args, " "); got != tc.want || e.remoteName() != tc.remote {
			t.Errorf("%v: args %q remote %q, want %q %q", tc.args, got, e.remoteName(), tc.want, tc.remote)
		}
	}
}

func TestRemotePrefixOnNewFlags(t *testing.T) {
	e := newEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	e.getenv = func(string) string { return "" }
	root := newRoot(e)
	cmd, rest, _ := root.Find([]string{"new", "--name", "lab:x", "--from", "src/snap"})
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	if err := e.remotePrefixes(cmd, cmd.Flags().Args()); err != nil {
		t.Fatal(err)
	}
	if n, f := cmd.Flags().Lookup("name").Value.String(), cmd.Flags().Lookup("from").Value.String(); n != "x" || f != "src/snap" || e.remote != "lab" {
		t.Errorf("name %q from %q remote %q", n, f, e.remote)
	}
}

func TestRemotePrefixOnImportName(t *testing.T) {
	e := newEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	e.getenv = func(string) string { return "" }
	root := newRoot(e)
	cmd, rest, _ := root.Find([]string{"import", "lab:file.tar", "--name", "lab:x"})
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	args := cmd.Flags().Args()
	if err := e.remotePrefixes(cmd, args); err != nil {
		t.Fatal(err)
	}
	if n := cmd.Flags().Lookup("name").Value.String(); n != "x" || e.remote != "lab" || args[0] != "lab:file.tar" {
		t.Errorf("name %q remote %q file %q: the file is never rewritten", n, e.remote, args[0])
	}
}
