package userenv

import "testing"

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
