package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bigHook is a hook of maxHookBytes naming as many distinct paths under the home as fit.
func bigHook(salt string) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for i := 0; b.Len() < maxHookBytes-64; i++ {
		fmt.Fprintf(&b, "~/%s%x\n", salt, i)
	}
	return []byte(b.String())
}

// scanWithin runs Scan, failing the test when it takes longer than d.
func scanWithin(t *testing.T, d time.Duration, wd, home string) Tree {
	t.Helper()
	done := make(chan Tree, 1)
	go func() { done <- Scan(wd, home, Options{}, nil) }()
	select {
	case tree := <-done:
		return tree
	case <-time.After(d):
		t.Fatalf("the scan took more than %v", d)
		return Tree{}
	}
}

// The hooks git runs inside are the tree's to write (an earlier run's sandbox, the
// repository's author), and the launch reads them for the tools they call (hostile
// review, session 21): each hook's 64 KiB of distinct paths cost about 0.4 s, read again
// for each of the work trees sharing the git directory (.git files naming it), so 200
// such files made the launch take many minutes. A hook file is read once a launch, and
// all hooks together are read up to a budget, the rest said.
func TestScanHookToolsBounded(t *testing.T) {
	wd, home := realTemp(t), realTemp(t)
	hooks := filepath.Join(wd, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	os.WriteFile(filepath.Join(wd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	for _, h := range hookNames {
		os.WriteFile(filepath.Join(hooks, h), bigHook(h), 0o755)
	}
	for i := 0; i < 200; i++ {
		d := filepath.Join(wd, fmt.Sprint("w", i))
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, ".git"), []byte("gitdir: ../.git\n"), 0o644)
	}
	tree := scanWithin(t, 20*time.Second, wd, home)
	if strings.Contains(strings.Join(tree.Notes, "\n"), "hooks") {
		t.Errorf("hooks within the budget are said unread: %q", tree.Notes)
	}

	// Distinct hook files past the budget: said, not read.
	for i := 0; i < 3; i++ {
		g := filepath.Join(wd, fmt.Sprint("g", i))
		os.MkdirAll(filepath.Join(g, "hooks"), 0o755)
		os.WriteFile(filepath.Join(g, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		for _, h := range hookNames {
			os.WriteFile(filepath.Join(g, "hooks", h), bigHook(fmt.Sprint(i, h)), 0o755)
		}
		os.WriteFile(filepath.Join(wd, fmt.Sprint("w", i), ".git"), []byte(fmt.Sprintf("gitdir: ../g%d\n", i)), 0o644)
	}
	tree = scanWithin(t, 20*time.Second, wd, home)
	if !strings.Contains(strings.Join(tree.Notes, "\n"), "git hooks past the") {
		t.Errorf("the hooks past the budget are not said: %q", tree.Notes)
	}
}

// A hook swapped for a FIFO between the stat that found it a regular file and its open
// (a sandbox still running on the tree): the open does not wait for a writer that never
// comes, and the FIFO is not read as the hook.
func TestReadHookSwappedForFIFO(t *testing.T) {
	hook := filepath.Join(t.TempDir(), "pre-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755)
	fi, err := os.Stat(hook)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(hook)
	if err := syscall.Mkfifo(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readHook(hook, fi)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("the FIFO was read as the hook")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading the hook waited on the FIFO")
	}
}

// A hook naming hundreds of executables that exist outside the sandbox (a Debian host has
// some 540 in /var/lib/dpkg/info), in a git directory 200 work trees share: each pair was
// a fact, de-duplicated by a linear search, and a warning line at launch (hostile review,
// session 21). The facts are bounded, the rest counted.
func TestScanHookToolsFactsBounded(t *testing.T) {
	wd, home := realTemp(t), realTemp(t)
	hooks := filepath.Join(wd, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	os.MkdirAll(filepath.Join(home, "tools"), 0o755)
	os.WriteFile(filepath.Join(wd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for i := 0; i < 600; i++ {
		tool := filepath.Join(home, "tools", fmt.Sprint("t", i))
		os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755)
		b.WriteString(tool + "\n")
	}
	os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte(b.String()), 0o755)
	for i := 0; i < 200; i++ {
		d := filepath.Join(wd, fmt.Sprint("w", i))
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, ".git"), []byte("gitdir: ../.git\n"), 0o644)
	}
	tree := scanWithin(t, 20*time.Second, wd, home)
	if n := len(tree.HookTools); n == 0 || n > 64 {
		t.Errorf("%d hook tool facts, want 1 to 64", n)
	}
	if want := 201*600 - len(tree.HookTools); tree.HookToolsMore != want {
		t.Errorf("%d more facts counted, want %d", tree.HookToolsMore, want)
	}
}

// A hook longer than box reads is said, not passed over in part: a tool it calls past
// its first maxHookBytes is not warned of (hostile review, session 21).
func TestScanHookToolsLongHookSaid(t *testing.T) {
	wd, home := realTemp(t), realTemp(t)
	hooks := filepath.Join(wd, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	os.WriteFile(filepath.Join(wd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\n"+strings.Repeat("# padding\n", maxHookBytes/10)+"~/.local/bin/ruff\n"), 0o755)
	tree := Scan(wd, home, Options{}, nil)
	if !strings.Contains(strings.Join(tree.Notes, "\n"), "read only in their first") {
		t.Errorf("the hook read in part is not said: %q", tree.Notes)
	}
}
