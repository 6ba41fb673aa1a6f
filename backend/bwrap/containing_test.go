package bwrap_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// box run in a subdirectory of a repository whose core.hooksPath lies inside it, as the
// unprivileged user. While the sandbox runs, the operator commits in the repository from
// another terminal: the hook the sandbox tried to plant must not run. The sandbox waits
// (for a file the test makes) until the host's commit is done.
func TestSandboxContainingRepoHooksPathDuringRun(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.host(w.proj, gitInit+`git config core.hooksPath tools/githooks && mkdir -p tools/githooks && git commit -q --allow-empty -m one`); err != nil {
		t.Fatal(err, out)
	}
	m := w.markers()
	c := w.cmd("run", "-y", "--", "sh", "-c", `printf '#!/bin/sh\ntouch `+m+`/during\n' > githooks/pre-commit 2>/dev/null && chmod +x githooks/pre-commit && echo planted
touch ready
while [ ! -e go ]; do sleep 0.05; done`)
	c.Dir = filepath.Join(w.proj, "tools")
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	// Wait for the condition: the sandbox has tried its plant, or it ended.
	waitFile(t, filepath.Join(w.proj, "tools", "ready"), done, &errb)
	w.host(w.proj, `git commit -q --allow-empty -m during`)
	w.write(filepath.Join(w.proj, "tools", "go"), "")
	if err := <-done; err != nil {
		t.Fatalf("box run: %v\n%s", err, errb.String())
	}
	if strings.Contains(out.String(), "planted") {
		t.Errorf("the sandbox wrote into the containing repository's hooksPath")
	}
	w.noMarkers(m, "the host's commit during the run")
}

// A relative core.hooksPath in the user's global git config (core.hooksPath = .githooks,
// a common way to share a project's hooks), as the unprivileged user: the project's
// .githooks is read-only inside (made empty where missing), so the host's next commit
// runs nothing the sandbox wrote there.
func TestSandboxGlobalHooksPath(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	w.write(filepath.Join(w.home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n")
	if out, err := w.host(w.proj, gitInit+`git commit -q --allow-empty -m one`); err != nil {
		t.Fatal(err, out)
	}
	m := w.markers()
	r := w.sh(`mkdir -p .githooks; printf '#!/bin/sh\ntouch ` + m + `/global\n' > .githooks/pre-commit 2>/dev/null && chmod +x .githooks/pre-commit && echo planted; true`)
	if strings.Contains(r.stdout, "planted") {
		t.Errorf("the sandbox wrote a hook into .githooks:\n%s", r.stderr)
	}
	w.host(w.proj, `git commit -q --allow-empty -m two`)
	w.noMarkers(m, "the host's commit after the run")
}
