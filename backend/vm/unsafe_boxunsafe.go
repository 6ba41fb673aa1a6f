//go:build boxunsafe

package vm

import (
	"os"
	"slices"
	"strings"
)

// A test build only (go build -tags boxunsafe): BOX_UNSAFE_OFF=import-members,... switches
// the named protections off, so the tests can show what each one stops. Release builds
// do not contain this file.
func init() {
	off := strings.Split(os.Getenv("BOX_UNSAFE_OFF"), ",")
	protectionOff = func(name string) bool { return slices.Contains(off, name) }
}
