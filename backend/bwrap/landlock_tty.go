package bwrap

// The Landlock mode's devices. Without a mount namespace /dev is the host's: a rule on
// /dev/pts (or a read rule on /dev) would let the sandbox open every terminal of yours,
// write into it, read its keystrokes and ioctl it. The mode grants the devices a command
// writes (DefaultLandlockDevices, never /dev/pts) and the command's own terminal, the one
// box passes as its stdio, by its path; nothing else of /dev. A pty the command makes
// itself (/dev/ptmx) gives its other end by TIOCGPTPEER, as glibc's openpty asks.

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ProtLandlockTerminals names the rule that keeps the host's other terminals out of the
// Landlock mode (switched off only in a test build: /dev readable and /dev/pts writable,
// as before, so the drill can show the sandbox writing into another terminal).
const ProtLandlockTerminals = "landlock-pts"

// withTerminals is p with the command's own terminal (the stdio descriptors that are
// terminals, by their /dev path) among its devices.
func (p LandlockPlan) withTerminals(stdio []uintptr) LandlockPlan {
	p.Devices = slices.Clone(p.Devices)
	if protectionOff(ProtLandlockTerminals) {
		p.ReadOnly = append(slices.Clone(p.ReadOnly), "/dev")
		p.Devices = append(p.Devices, "/dev/pts")
		return p
	}
	for _, fd := range stdio {
		if _, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err != nil {
			continue // not a terminal
		}
		link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
		if err == nil && strings.HasPrefix(link, "/dev/") && !slices.Contains(p.Devices, link) {
			p.Devices = append(p.Devices, link)
		}
	}
	return p
}

// OnTerminal is whether box has a controlling terminal, in front or in the background
// (box run ... &, under timeout): job control applies to box's group there.
func OnTerminal() bool {
	f, err := os.OpenFile("/dev/tty", os.O_RDONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// ForegroundTerminal is whether box runs in front on a controlling terminal: its process
// group is the terminal's foreground group, so the terminal's Ctrl-C reaches the group.
func ForegroundTerminal() bool {
	f, err := os.OpenFile("/dev/tty", os.O_RDONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return false // no controlling terminal
	}
	defer f.Close()
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}
