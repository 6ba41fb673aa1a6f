// Command boxlab starts the hermetic lab and keeps it up until interrupted: for poking at
// the lab by hand (ip netns exec boxlab-...-host ...). Run as root.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/heavy-duty/box/drill/lab"
)

func main() {
	l, err := lab.Start(context.Background())
	if err != nil {
		if l != nil {
			l.Close()
		}
		fmt.Fprintln(os.Stderr, "boxlab:", err)
		os.Exit(1)
	}
	fmt.Printf("host netns: %s\nresolv.conf: %s\ntun: %s\nctrl-c to tear down\n", l.HostNS(), l.ResolvConf, l.Tun)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "boxlab: teardown:", err)
		os.Exit(1)
	}
}
