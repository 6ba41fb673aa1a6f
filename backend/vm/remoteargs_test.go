package vm

import (
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
