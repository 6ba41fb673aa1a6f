package testenv

import "testing"

// Each package's tests run as a user of their own unless BOX_TEST_USER names one: two
// packages side by side as one user share its RLIMIT_NPROC.
func TestUserName(t *testing.T) {
	for _, c := range []struct{ env, arg0, want string }{
		{"", "/tmp/go-build1/b001/drill.test", "boxtest-drill"},
		{"", "/tmp/go-build1/b002/bwrap.test", "boxtest-bwrap"},
		{"boxh-lead", "/tmp/x/drill.test", "boxh-lead"},
		{"", "/usr/bin/something", "boxtest"},
		{"", "/tmp/x/Weird_Name.test", "boxtest"},
	} {
		if got := userName(c.env, c.arg0); got != c.want {
			t.Errorf("userName(%q, %q) = %q, want %q", c.env, c.arg0, got, c.want)
		}
	}
}
