package main

import (
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"

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

// home is the operator's home directory: $HOME, else the password database.
func (e *env) home() string {
	if h := e.getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// xdg returns $name when absolute, else home/fallback (the XDG base directory rule).
func (e *env) xdg(name, fallback string) string {
	if d := e.getenv(name); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return filepath.Join(e.home(), fallback)
}

func (e *env) configHome() string { return e.xdg("XDG_CONFIG_HOME", ".config") }
func (e *env) dataHome() string   { return e.xdg("XDG_DATA_HOME", ".local/share") }

// runtimeDir is $XDG_RUNTIME_DIR when it is an existing directory, else "" (box then
// keeps its sockets under the data directory). box run and box allow both read it here,
// so they agree on where a run's control socket is.
func (e *env) runtimeDir() string {
	d := e.getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(d) {
		return ""
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Clean(d)
}

// userName is the login name for USER and LOGNAME inside the sandbox.
func (e *env) userName() string {
	if u := e.getenv("USER"); u != "" && !strings.ContainsAny(u, "/\x00") {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return filepath.Base(e.home())
}
