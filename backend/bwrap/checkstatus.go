package bwrap

// Status is the check's verdict: "ok", "warn" (it failed; the backend still runs) or
// "fail" (the backend cannot run while it fails).
func (c HostCheck) Status() string {
	switch {
	case c.OK:
		return "ok"
	case c.Fatal:
		return "fail"
	}
	return "warn"
}

// CauseName is the user-namespace check's cause (docs/bwrap.md); "" for the others.
func (c HostCheck) CauseName() string {
	if c.Name != checkUserns {
		return ""
	}
	return c.Cause.String()
}

// checkUserns is the name of the check that carries a cause.
const checkUserns = "user namespaces"
