package bwrap

import (
	"errors"
	"fmt"

	"github.com/heavy-duty/box/policy"
)

// The errors below carry facts, not advice: the CLI words their hints, since a hint
// names box's verbs and flags, which the backend does not know.

// Need is what a CheckError says this host lacks.
type Need int

const (
	NeedSandbox   Need = iota // the launch failed
	NeedAllowlist             // the allowlist tier could not attach
	NeedInternet              // the internet tier could not attach
	NeedLimits                // no limit mechanism holds
	NeedHelper                // no internet helper (pasta, slirp4netns)
	NeedBwrap                 // bwrap is not installed
)

// CheckError: the host lacks something the sandbox needs; box's host check diagnoses it.
type CheckError struct {
	Need Need
	Err  error
}

func (e *CheckError) Error() string { return e.Err.Error() }
func (e *CheckError) Unwrap() error { return e.Err }

func needs(n Need, err error) error { return &CheckError{Need: n, Err: err} }

// SetupEndedError: the sandbox ended while bwrap set it up (a mount it could not make),
// before the command ran; Err is what box's own step then ran into (the block fd's
// broken pipe, a /proc entry gone). Field test (session 19): box said only "write |1:
// broken pipe" under bwrap's "Can't create file at /etc/resolv.conf".
type SetupEndedError struct{ Err error }

func (e *SetupEndedError) Error() string {
	return fmt.Sprintf("the sandbox ended while bwrap set it up, before the command ran: bwrap's own message above says what it could not do (box then: %v)", e.Err)
}
func (e *SetupEndedError) Unwrap() error { return e.Err }

// ErrRoot: box refuses to sandbox as root unless the plan allows it (Plan.AllowRoot).
var ErrRoot = errors.New("refusing to sandbox as root: inside, the command would keep root's ownership of files (/etc/shadow, SSH host keys and other root-only files would be readable)")

// EnvNameError: a requested environment variable name is not one (Request.Env).
type EnvNameError struct{ Err error }

func (e *EnvNameError) Error() string { return "--env: " + e.Err.Error() }

// AllowTierError: patterns were requested (Request.Allow) for a tier that is not the
// allowlist tier.
type AllowTierError struct{ Tier policy.Tier }

func (e *AllowTierError) Error() string {
	return fmt.Sprintf("--allow: the network tier is %s, not allowlist", e.Tier)
}

// AllowPatternError: a requested allow pattern does not parse.
type AllowPatternError struct{ Err error }

func (e *AllowPatternError) Error() string { return "--" + e.Err.Error() }
