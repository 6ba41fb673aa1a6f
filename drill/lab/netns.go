package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetns runs fn on an OS thread switched into the network namespace at path. Sockets
// fn creates belong to that namespace for their whole life, whichever thread later uses
// them, so the lab serves and probes without a process per namespace.
func InNetns(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Restore before unlocking: the goroutine may run on the main thread, which the
		// runtime cannot discard, and a thread left in a lab namespace would make this
		// process look like one of the lab's (ip netns pids). If restoring fails the
		// thread stays locked and is discarded when the goroutine ends.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("restore netns: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Listen opens a listener inside the network namespace at nsPath.
func Listen(nsPath, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := InNetns(nsPath, func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen %s %s in %s: %w", network, addr, nsPath, err)
	}
	return l, nil
}

// Dialer returns a DialContext func whose connections originate in the network namespace
// at nsPath (for http.Transport and net.Resolver).
func Dialer(nsPath string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := InNetns(nsPath, func() (err error) {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}
