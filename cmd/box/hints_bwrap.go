package main

import (
	"errors"
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
)

// runRequestErr words bwrap.NewRequest's refusals by box run's flag names.
func runRequestErr(err error) error {
	var be *bwrap.BackendError
	var nb *bwrap.NotBwrapError
	var ne *bwrap.NetworkError
	var ie *bwrap.ModeError
	switch {
	case errors.As(err, &be):
		return usagef("the backends are bwrap (box run) and vm (box new)", "--backend: %s", be.Err)
	case errors.As(err, &nb):
		who := fmt.Sprintf("profile %q asks for", nb.Profile)
		if nb.Asked {
			who = "--backend names"
		}
		return usagef("box run sandboxes a command with bwrap; vm boxes are made and entered with 'box new' and 'box shell'",
			"box run is the bwrap backend; %s backend %q", who, nb.Backend)
	case errors.As(err, &ne):
		return usagef(tierHint(ne.Err)+": run 'box run --help'", "--network: %s", ne.Err)
	case errors.As(err, &ie):
		return usagef("the modes are bwrap, landlock and auto: run 'box run --help'", "--isolation: %s", ie.Err)
	}
	return err
}

// tierHint is the hint for a name that is no network tier: the tiers, after the one it
// was probably meant to be.
func tierHint(err error) string {
	h := "the tiers are " + policy.TierList("and")
	var te *policy.TierError
	if errors.As(err, &te) && te.DidYouMean() != "" {
		h = te.DidYouMean() + " " + h
	}
	return h
}
