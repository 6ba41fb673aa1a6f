package main

import "github.com/heavy-duty/box/drill"

// exitInterrupted is a verb's code after Ctrl-C, as a shell's (128+SIGINT).
const exitInterrupted = 130

// whileDrilling runs the drill guarded (drill.Guarded: it cleans up on Ctrl-C and a
// closed pipe); after Ctrl-C box exits 130.
func whileDrilling(run func() error) error {
	interrupted, err := drill.Guarded(run)
	if interrupted {
		return &exitError{exitInterrupted}
	}
	return err
}
