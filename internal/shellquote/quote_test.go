package shellquote

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "''",
		"--ro-bind":          "--ro-bind",
		"/a/b.c:d,e=f+g@h_1": "/a/b.c:d,e=f+g@h_1",
		"a b":                "'a b'",
		"it's":               `'it'\''s'`,
		"$HOME":              "'$HOME'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
