//go:build boxphase

package phase

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

// A test build only: see phase.go. BOX_CPUPROFILE=FILE writes a CPU profile of the run,
// from package initialisation to the "exit" mark (pprof merges several runs' files).
func init() {
	prof := os.Getenv("BOX_CPUPROFILE")
	if prof != "" {
		if f, err := os.Create(prof); err == nil && pprof.StartCPUProfile(f) == nil {
			mark = func(name string) {
				if name == "exit" {
					pprof.StopCPUProfile()
					f.Close()
				}
			}
		}
	}
	if os.Getenv("BOX_PHASES") != "1" {
		return
	}
	prev := mark
	mark = func(name string) {
		fmt.Fprintf(os.Stderr, "box-phase %s %d\n", name, time.Now().UnixNano())
		prev(name)
	}
	mark("init")
}
