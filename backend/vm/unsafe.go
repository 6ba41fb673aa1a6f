package vm

// protectionOff reports whether a test build switched the named protection off
// (BOX_UNSAFE_OFF, see unsafe_boxunsafe.go). Release builds leave every one on.
var protectionOff = func(string) bool { return false }
