package bwrap

import (
	"slices"
	"testing"
)

// TestArgvLines: one option and its operands a line, quoted where a shell needs it, the
// command whole on the last line, and a truncated option kept rather than dropped.
func TestArgvLines(t *testing.T) {
	got := ArgvLines([]string{"--ro-bind", "/usr", "/usr", "--unshare-all", "--setenv", "A", "x y", "--", "sh", "-c", "echo 'hi'", "--tmpfs"})
	want := []string{"--ro-bind /usr /usr", "--unshare-all", "--setenv A 'x y'", `-- sh -c 'echo '\''hi'\''' --tmpfs`}
	if !slices.Equal(got, want) {
		t.Errorf("ArgvLines:\n got %q\nwant %q", got, want)
	}
	if got := ArgvLines([]string{"--bind", "/a"}); !slices.Equal(got, []string{"--bind /a"}) {
		t.Errorf("a truncated option: %q", got)
	}
}
