package vm

import (
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/errs"
)

// A prefix is stripped and noted; one remote per command, never against --remote; an
// empty side is refused. Every refusal is a usage error.
func TestRemoteArgsTake(t *testing.T) {
	for _, tc := range []struct {
		flag string
		in   []string
		want string // the last name taken, or "usage" when the last Take is refused
		seen string
	}{
		{"", []string{"work"}, "work", ""},
		{"", []string{"lab:work"}, "work", "lab"},
		{"", []string{"lab:a", "b"}, "b", "lab"},
		{"", []string{"lab:a", "lab:b"}, "b", "lab"},
		{"lab", []string{"lab:a"}, "a", "lab"},
		{"lab", []string{"other:a"}, "usage", ""},
		{"", []string{"lab:a", "other:b"}, "usage", "lab"},
		{"", []string{":a"}, "usage", ""},
		{"", []string{"lab:"}, "usage", ""},
	} {
		r := RemoteArgs{Flag: tc.flag}
		var got string
		var err error
		for _, v := range tc.in {
			got, err = r.Take("box", v)
		}
		if err != nil {
			if tc.want != "usage" || !errs.IsUsage(err) {
				t.Errorf("%q %v: %v", tc.flag, tc.in, err)
			}
		} else if got != tc.want {
			t.Errorf("%q %v: %q, want %q", tc.flag, tc.in, got, tc.want)
		}
		if r.Seen != tc.seen {
			t.Errorf("%q %v: seen %q, want %q", tc.flag, tc.in, r.Seen, tc.seen)
		}
	}
}

func TestTmuxSession(t *testing.T) {
	if s, err := TmuxSession("w", nil); s != DefaultTmuxSession || err != nil {
		t.Errorf("no session: %q %v", s, err)
	}
	if s, err := TmuxSession("w", []string{"run-1"}); s != "run-1" || err != nil {
		t.Errorf("run-1: %q %v", s, err)
	}
	for _, bad := range []string{"-x", "a b", "a;b", "$(x)", ""} {
		if _, err := TmuxSession("w", []string{bad}); !errs.IsUsage(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

// Only box names lose their prefix: both of rename's, the first argument of the other
// verbs on a box, none of list's, new's or import's (a file), nothing after "--".
func TestRemoteArgsOnlyBoxNames(t *testing.T) {
	for _, tc := range []struct {
		verb string
		args []string
		n    int // arguments before "--"
		want string
	}{
		{"exec", []string{"lab:work", "echo", "a:b"}, 1, "work echo a:b"},
		{"exec", []string{"lab:work"}, 0, "lab:work"},
		{"rename", []string{"lab:a", "lab:b"}, 2, "a b"},
		{"export", []string{"lab:work", "out:file.tar"}, 2, "work out:file.tar"},
		{"snapshot", []string{"lab:work", "x:y"}, 2, "work x:y"},
		{"import", []string{"lab:file.tar"}, 1, "lab:file.tar"},
		{"new", []string{"lab:x"}, 1, "lab:x"},
		{"list", []string{"lab:x"}, 1, "lab:x"},
		{"info", nil, 0, ""},
	} {
		r := RemoteArgs{}
		if err := r.Args(tc.verb, tc.args, tc.n); err != nil {
			t.Errorf("%s %v: %v", tc.verb, tc.args, err)
		} else if got := strings.Join(tc.args, " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.verb, got, tc.want)
		}
	}
	if f := BoxFlags("new"); strings.Join(f, " ") != "name from" {
		t.Errorf("new's box flags: %v", f)
	}
	if f := BoxFlags("import"); strings.Join(f, " ") != "name" {
		t.Errorf("import's box flags: %v", f)
	}
}
