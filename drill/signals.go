package drill

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// Guarded runs a drill so that it always cleans up after itself: Ctrl-C (passed on to
// the probes by the session) and a closed pipe (a write fails with EPIPE instead of
// killing box) end it through its own deferred cleanup, which removes its bait.
// interrupted says Ctrl-C came while it ran.
func Guarded(run func() error) (interrupted bool, err error) {
	var sigint atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	done := make(chan struct{})
	defer func() { signal.Stop(sigs); close(done) }()
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGINT {
					sigint.Store(true)
				}
			case <-done:
				return
			}
		}
	}()
	err = run()
	return sigint.Load(), err
}
