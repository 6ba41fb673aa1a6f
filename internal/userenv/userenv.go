// Package userenv reads the operator's session from its environment: the home, the XDG
// base directories and the login name. The CLI hands in its getenv, so tests run verbs
// with variables of their own.
package userenv

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// Home is the operator's home directory: $HOME, else the password database.
func Home(getenv func(string) string) string {
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	if u, err := currentUser(); err == nil {
		return u.HomeDir
	}
	return ""
}

// xdg returns $name when absolute, else home/fallback (the XDG base directory rule).
func xdg(getenv func(string) string, name, fallback string) string {
	if d := getenv(name); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return filepath.Join(Home(getenv), fallback)
}

// ConfigHome is $XDG_CONFIG_HOME, else ~/.config.
func ConfigHome(getenv func(string) string) string { return xdg(getenv, "XDG_CONFIG_HOME", ".config") }

// CacheHome is $XDG_CACHE_HOME, else ~/.cache; "" when the home cannot be told (never
// a relative path: os.UserCacheDir takes a relative $HOME as it is).
func CacheHome(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if h := Home(getenv); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache")
	}
	return ""
}

// DataHome is $XDG_DATA_HOME, else ~/.local/share.
func DataHome(getenv func(string) string) string {
	return xdg(getenv, "XDG_DATA_HOME", ".local/share")
}

// RuntimeDir is $XDG_RUNTIME_DIR when it is an existing directory, else "" (box then
// keeps its sockets under the data directory). box run and box allow both read it here,
// so they agree on where a run's control socket is.
func RuntimeDir(getenv func(string) string) string {
	d := getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(d) {
		return ""
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Clean(d)
}

// currentUser is user.Current (a test's stand-in for a uid with no passwd entry).
var currentUser = user.Current

// UserName is the login name for USER and LOGNAME inside the sandbox: $USER, else the
// password database's, else the uid in decimal. A uid with no passwd entry (a container
// run with --user 12345) has no name: HOME's basename, used before, could be another
// uid's name (HOME=/home/app where the image's app user is 1000) or "/" (field review,
// session 21).
func UserName(getenv func(string) string) string {
	if u := getenv("USER"); u != "" && !strings.ContainsAny(u, "/\x00") {
		return u
	}
	if u, err := currentUser(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
