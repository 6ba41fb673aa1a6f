package main

import (
	"fmt"
	"path/filepath"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

type setupUsernsOptions struct {
	remove bool
	root   string
	bwrap  string
}

// setup-userns is its own verb, not a flag of setup-host: setup-host builds the vm
// backend's Incus stack (it needs incusd), while this profile is for the bwrap backend on
// a machine that may have no Incus at all.
func newSetupUsernsCmd(e *env) *cobra.Command {
	o := &setupUsernsOptions{}
	cmd := &cobra.Command{
		Use:     "setup-userns [--remove]",
		Short:   "let box's bwrap create user namespaces under Ubuntu's AppArmor restriction (root)",
		GroupID: groupSandbox,
		Long:    helpText("setup-userns"),
		Example: helpText("setup-userns.example"),
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runSetupUserns(e, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.remove, "remove", false, "unload the profile and delete its file")
	f.StringVar(&o.root, "root", "/", "the filesystem root the profile goes under (for an image or a test)")
	f.StringVar(&o.bwrap, "bwrap", "", "the bwrap binary to grant (default: bwrap on PATH, resolved)")
	return cmd
}

func runSetupUserns(e *env, o *setupUsernsOptions) error {
	u := host.UsernsOn(o.root)
	step := u.Remove
	if !o.remove {
		bin := o.bwrap
		if bin == "" {
			var err error
			if bin, err = bwrap.LookBwrap(); err != nil {
				return err
			}
		}
		if !filepath.IsAbs(bin) {
			return usagef("name bwrap by its absolute path", "--bwrap: %q is not an absolute path", bin)
		}
		step = func() (host.Step, error) { return u.Setup(bin) }
	}
	s, err := step()
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, s)
	return nil
}

// usernsHint is box's own fix for a user-namespace cause ("" when the backend's fix,
// outside box, is the whole answer).
func usernsHint(c bwrap.UsernsCause) string {
	switch c {
	case bwrap.UsernsAppArmorRestrict:
		return "sudo box setup-userns: one AppArmor profile granting user namespaces to box's bwrap alone; the restriction stays on for every other program (docs/bwrap.md)"
	case bwrap.UsernsAppArmorChildren:
		return "sudo box setup-userns loads a profile granting box's bwrap userns without confining its children; if the distribution's bwrap profile also attaches to it, see docs/bwrap.md"
	}
	return ""
}

// usernsErrHint: the hint of a box run that could not start (hints.go).
func usernsErrHint(e *bwrap.UsernsError) string {
	if h := usernsHint(e.Cause); h != "" {
		return h
	}
	if e.Fix != "" {
		return e.Fix + "\nthen run 'box --check'"
	}
	return "run 'box --check' to diagnose the sandbox"
}
