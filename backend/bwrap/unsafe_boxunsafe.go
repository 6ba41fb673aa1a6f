//go:build boxunsafe

package bwrap

import (
	"os"
	"slices"
	"strings"
)

// A test build only (go build -tags boxunsafe): BOX_UNSAFE_OFF=fds,keyring,... switches
// the named protections off, so the tests can show the drill reporting each breach.
// Release builds do not contain this file.
func init() {
	off := strings.Split(os.Getenv("BOX_UNSAFE_OFF"), ",")
	protectionOff = func(name string) bool { return slices.Contains(off, name) }
}
