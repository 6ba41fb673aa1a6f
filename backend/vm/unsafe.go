package vm

// protectionOff reports whether a test build switched the named protection off
// (BOX_UNSAFE_OFF, see unsafe_boxunsafe.go). Release builds leave every one on.
var protectionOff = func(string) bool { return false }

// ProtIsolatedIDs names the per-box host uid range of containers
// (security.idmap.isolated): BOX_UNSAFE_OFF=idmap-isolated mints containers on the one
// shared range, as box did before.
const ProtIsolatedIDs = "idmap-isolated"
