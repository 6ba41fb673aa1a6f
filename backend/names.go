package backend

import "fmt"

// ValidName checks a box name, the same rule for both backends (so a name means the
// same box whatever the backend): Incus's instance name rule, 1 to 63 characters, ASCII
// letters, digits and hyphens, not starting with a digit or a hyphen, not ending with a
// hyphen.
func ValidName(name string) error {
	bad := func(why string) error { return &NameError{What: "box name", Name: name, Why: why} }
	switch {
	case name == "":
		return &NameError{What: "box name", Why: "empty"}
	case len(name) > 63:
		return bad("longer than 63 characters")
	case name[0] == '-':
		return bad("must not start with a hyphen")
	case name[0] >= '0' && name[0] <= '9':
		return bad("must not start with a digit")
	case name[len(name)-1] == '-':
		return bad("must not end with a hyphen")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return bad(fmt.Sprintf("%q is not allowed (letters, digits and hyphens only)", r))
		}
	}
	return nil
}

// ValidLabel checks a snapshot label: 1 to 63 characters, no "/" (it separates box
// and snapshot), no whitespace or control characters, not "." or "..". (A bwrap box
// also refuses a leading dot: dirbox.ValidLabel.)
func ValidLabel(name string) error {
	bad := func(why string) error { return &NameError{What: "snapshot name", Name: name, Why: why} }
	switch {
	case name == "":
		return &NameError{What: "snapshot name", Why: "empty"}
	case len(name) > 63:
		return bad("longer than 63 characters")
	case name == "." || name == "..":
		return bad("reserved")
	}
	for _, r := range name {
		if r == '/' || r <= ' ' || r == 0x7f {
			return bad(fmt.Sprintf("%q is not allowed", r))
		}
	}
	return nil
}

// NameError: a box name (What "box name") or a snapshot label ("snapshot name")
// breaks the rules; Why says which.
type NameError struct{ What, Name, Why string }

func (e *NameError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("invalid %s: %s", e.What, e.Why)
	}
	return fmt.Sprintf("invalid %s %q: %s", e.What, e.Name, e.Why)
}
