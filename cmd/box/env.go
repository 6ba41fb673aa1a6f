package main

import (
	"io"
	"os"

	"github.com/heavy-duty/box/internal/userenv"
	"golang.org/x/term"
)

// env is what a verb may use of the outside world. Verbs take it instead of reaching
// for os.*, so tests can run them in-process with their own streams and variables.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        func() []string
	// stdinTTY reports whether stdin is a terminal (the audit asks only then).
	stdinTTY func() bool
	// quiet is the root's --quiet: no progress line, no closing notes, errors only.
	quiet bool
	// remote is the vm verbs' --remote (or a REMOTE: prefix); target is box new's
	// --target (remote.go).
	remote, target string
}

func newEnv(stdin io.Reader, stdout, stderr io.Writer) *env {
	return &env{
		stdin: stdin, stdout: stdout, stderr: stderr,
		getenv: os.Getenv, environ: os.Environ,
		stdinTTY: func() bool {
			f, ok := stdin.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		},
	}
}

// The operator's directories and login name (package userenv).
func (e *env) home() string       { return userenv.Home(e.getenv) }
func (e *env) configHome() string { return userenv.ConfigHome(e.getenv) }
func (e *env) dataHome() string   { return userenv.DataHome(e.getenv) }
func (e *env) runtimeDir() string { return userenv.RuntimeDir(e.getenv) }
func (e *env) userName() string   { return userenv.UserName(e.getenv) }
