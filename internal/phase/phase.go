// Package phase marks the steps of box's start-up, for the start-up breakdown in bench/.
// Release builds hold only the no-op: a test build (go build -tags boxphase) run with
// BOX_PHASES=1 prints each mark to stderr as "box-phase NAME UNIX-NANOSECONDS", which
// bench/phase_test.go turns into a table of milliseconds.
package phase

var mark = func(string) {}

// Mark records that the step name ends now.
func Mark(name string) { mark(name) }
