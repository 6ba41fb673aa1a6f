package bwrap

import "testing"

// --check's verdicts: a failed fatal check is "fail", a failed other "warn"; only the
// user-namespace check names a cause, also when it passed.
func TestHostCheckStatus(t *testing.T) {
	for _, c := range []struct {
		check       HostCheck
		status, why string
	}{
		{HostCheck{Name: "bwrap", OK: true, Fatal: true}, "ok", ""},
		{HostCheck{Name: "bwrap", Fatal: true}, "fail", ""},
		{HostCheck{Name: "nix"}, "warn", ""},
		{HostCheck{Name: checkUserns, OK: true, Cause: UsernsOK}, "ok", UsernsOK.String()},
		{HostCheck{Name: checkUserns, Fatal: true, Cause: UsernsMaxZero}, "fail", UsernsMaxZero.String()},
		{HostCheck{Name: "limits", Cause: UsernsMaxZero}, "warn", ""},
	} {
		if s, why := c.check.Status(), c.check.CauseName(); s != c.status || why != c.why {
			t.Errorf("%+v: %q %q, want %q %q", c.check, s, why, c.status, c.why)
		}
	}
	if UsernsMaxZero.String() == "" || UsernsMaxZero.String() == UsernsOK.String() {
		t.Errorf("causes without names: %q %q", UsernsMaxZero, UsernsOK)
	}
}
