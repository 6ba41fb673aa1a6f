package main

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// exitInterrupted is a verb's code after Ctrl-C, as a shell's (128+SIGINT).
const exitInterrupted = 130

// whileDrilling runs the drill so that it always cleans up after itself: Ctrl-C (passed
// on to the probes by the session) and a closed pipe (a write fails with EPIPE instead of
// killing box) end it through its own deferred cleanup, which removes its bait. After
// Ctrl-C it exits 130.
func whileDrilling(run func() error) error {
	var interrupted atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	done := make(chan struct{})
	defer func() { signal.Stop(sigs); close(done) }()
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGINT {
					interrupted.Store(true)
				}
			case <-done:
				return
			}
		}
	}()
	err := run()
	if interrupted.Load() {
		return &exitError{exitInterrupted}
	}
	return err
}
