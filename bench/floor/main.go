// Command floor is the least any Go launcher of box's sandbox can cost: it starts bwrap
// with the argv and fds box gives it (the info fd, a block fd already released, the
// seccomp filter) and waits for it, nothing else. BenchmarkStartup runs it as the sides
// "floor" (this file alone) and "floor+deps" (built with the packages box links added by
// an overlay, so their initialisation is paid too): box can come no nearer bare bwrap
// than they do.
//
//	floor FILTER BWRAP-ARG...
//	floor hello
//
// "floor hello" only prints hello: BenchmarkVersion's hello with box's libraries linked.
package main

import (
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "hello" {
		fmt.Println("hello")
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: floor FILTER BWRAP-ARG...")
		os.Exit(2)
	}
	pids, info, err := os.Pipe() // bwrap writes the sandbox's pid to info: kept open
	if err != nil {
		fail(err)
	}
	block, release, err := os.Pipe()
	if err != nil {
		fail(err)
	}
	release.Write([]byte{1})
	release.Close()
	filter, err := os.Open(os.Args[1])
	if err != nil {
		fail(err)
	}
	c := exec.Command("bwrap", os.Args[2:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.ExtraFiles = []*os.File{info, block, filter}
	err = c.Run()
	pids.Close()
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
