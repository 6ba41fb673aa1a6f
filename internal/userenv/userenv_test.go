package userenv

import (
	"os"
	"os/user"
	"strconv"
	"testing"
)

func TestDirs(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"HOME": "/h/../home/op/", "XDG_DATA_HOME": "rel/data", "XDG_CONFIG_HOME": "/cfg//x", "XDG_RUNTIME_DIR": dir + "/", "USER": "a/b"}
	getenv := func(k string) string { return vars[k] }
	for _, c := range []struct{ name, got, want string }{
		{"home", Home(getenv), "/home/op"},
		{"config (absolute $XDG_CONFIG_HOME)", ConfigHome(getenv), "/cfg/x"},
		{"data (relative $XDG_DATA_HOME is ignored)", DataHome(getenv), "/home/op/.local/share"},
		{"runtime", RuntimeDir(getenv), dir},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	if u := UserName(getenv); u == "a/b" || u == "" {
		t.Errorf("UserName with USER=a/b: %q, want the password database's name", u)
	}
	vars["XDG_RUNTIME_DIR"] = dir + "/missing"
	if d := RuntimeDir(getenv); d != "" {
		t.Errorf("RuntimeDir of a missing directory: %q, want \"\"", d)
	}
	vars["USER"] = "op"
	if u := UserName(getenv); u != "op" {
		t.Errorf("UserName: %q, want op", u)
	}
}

// A uid with no passwd entry (a container run with --user 12345) and no USER: the name
// inside was HOME's basename, a name that may belong to another uid (HOME=/home/app for
// an image whose app user is 1000) or be "/" (HOME=/). It is the uid itself now (field
// review, session 21).
func TestUserNameNoPasswdEntry(t *testing.T) {
	old := currentUser
	currentUser = func() (*user.User, error) { return nil, user.UnknownUserIdError(os.Getuid()) }
	defer func() { currentUser = old }()
	want := strconv.Itoa(os.Getuid())
	for _, home := range []string{"/home/app", "/"} {
		getenv := func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}
		if u := UserName(getenv); u != want {
			t.Errorf("UserName with HOME=%s, no USER, no passwd entry: %q, want the uid %s", home, u, want)
		}
	}
}
