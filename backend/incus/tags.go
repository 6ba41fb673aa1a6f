package incus

// IsBox reports whether inst is a box: tagged user.box=1, or user.claudebox=1 by box's
// predecessor. Only the instance's own config counts, never a profile's (expanded
// config): a profile must not be able to turn every instance into a box.
func IsBox(inst Instance) bool {
	return inst.Config[KeyBox] == "1" || inst.Config[KeyLegacy] == "1"
}

// UserOf is the account box enters inst as: user.box.user when set; "claude" for a
// legacy box (user.claudebox=1 without user.box.user); else "root".
//
// The API tells an unset key (absent from the map) from a set one, unlike
// `incus config get`, which prints an empty line for both. An empty value counts as
// unset: there is no account named "".
func UserOf(inst Instance) string {
	if u, ok := inst.Config[KeyUser]; ok && u != "" {
		return u
	}
	if inst.Config[KeyLegacy] == "1" {
		return "claude"
	}
	return "root"
}
