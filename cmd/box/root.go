package main

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

// Command groups in `box help`.
const (
	groupSandbox = "sandbox"
	groupModel   = "model"
	groupOther   = "other"
)

// newRoot builds the command tree: the single source of truth for help and dispatch.
func newRoot(e *env) *cobra.Command { return newRootFor(e, nil) }

// lone are the verbs built alone when a run names one first (box run, box exec: every
// tool call of an agent may go through them), and --version: the other twenty-odd
// verbs' flags and help are not built for nothing. Anything else (help, completion, a
// flag first, a typo) builds the whole tree.
var lone = map[string]func(*env) *cobra.Command{
	"run": newRunCmd, "exec": newExecCmd,
	"--version": func(*env) *cobra.Command { return nil },
}

// loneVerb is the constructor of the only verb args need, nil for the whole tree.
func loneVerb(args []string) func(*env) *cobra.Command {
	if len(args) == 0 || (args[0] == "--version" && len(args) > 1) {
		return nil
	}
	return lone[args[0]]
}

// newRootFor is the command tree; with only, root and only's verb alone.
func newRootFor(e *env, only func(*env) *cobra.Command) *cobra.Command {
	var check, checkJSON, showVersion bool
	root := &cobra.Command{
		Use:           "box",
		Short:         "a place for an untrusted command to work, away from your secrets, LAN and host",
		Long:          helpText("box", "{{tiers}}", strings.Join(policy.TierNames(), ", ")),
		Example:       helpText("box.example"),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || showVersion {
				return nil
			}
			hint := "run 'box help' for the list of commands"
			if s := safeSuggestions(cmd.SuggestionsFor(args[0])); len(s) > 0 {
				hint = "did you mean 'box " + s[0] + "'?"
			} else if args[0] == "check" {
				// box's own flag typed as a command (field review, session 21).
				hint = "did you mean 'box --check'? (it checks whether this machine can run the sandbox)"
			}
			return usagef(hint, "unknown command %q", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if showVersion {
				printVersion(cmd.OutOrStdout())
				return nil
			}
			if check {
				return runCheck(e, checkJSON)
			}
			if checkJSON {
				return usagef("box --check --json", "--json is a flag of --check here")
			}
			return cmd.Help()
		},
	}
	root.PersistentFlags().BoolVarP(&e.quiet, "quiet", "q", false, "no progress line or closing notes on stderr, only errors and warnings; with -y, no environment audit unless it flags a value")
	root.Flags().BoolVar(&check, "check", false, "diagnose whether this machine can run box, with a fix for each problem")
	root.Flags().BoolVar(&checkJSON, "json", false, "with --check: print the checks as a JSON array of objects (fields: docs/json.md)")
	// box's own --version, not cobra's (Version and SetVersionTemplate): a template
	// links text/template's reflective method calls, which keep every exported method
	// of every type in the binary (2 MB more that every verb's start-up pages in).
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "version for box")
	_ = root.Flags().SetAnnotation("version", cobra.FlagSetByCobraAnnotation, []string{"true"}) // as cobra's: no completion after it
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	root.CompletionOptions.DisableDefaultCmd = true // box's own 'completion' verb replaces cobra's
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef(fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath()), "%s", err)
	})
	root.SetHelpCommand(newHelpCmd(root))
	root.AddGroup(
		&cobra.Group{ID: groupSandbox, Title: "Sandboxes (bwrap backend):"},
		&cobra.Group{ID: groupVM, Title: "Boxes (vm and bwrap backends):"},
		&cobra.Group{ID: groupHost, Title: "Host (vm backend):"},
		&cobra.Group{ID: groupModel, Title: "Profiles and templates:"},
		&cobra.Group{ID: groupOther, Title: "Other commands:"},
	)
	root.SetHelpCommandGroupID(groupOther)
	if only != nil {
		if c := only(e); c != nil {
			root.AddCommand(c)
		}
		addRemoteFlags(root, e)
		registerCompletions(root, e)
		return root
	}
	root.AddCommand(newRunCmd(e), newAllowCmd(e), newDrillCmd(e), newProfilesCmd(e), newTemplatesCmd(e))
	root.AddCommand(newCompletionCmd(e), newManCmd(e), newVersionCmd())
	root.AddCommand(newSetupUsernsCmd(e))
	root.AddCommand(newSetupHostCmd(e), newTeardownHostCmd(e), newMigrateHostCmd(e), newDoctorCmd(e), newGrantCmd(e), newRevokeCmd(e))
	root.AddCommand(newNewCmd(e), newListCmd(e), newInfoCmd(e), newShellCmd(e), newTmuxCmd(e), newExecCmd(e), newSnapshotCmd(e),
		newRestoreCmd(e), newRenameCmd(e), newStartCmd(e), newStopCmd(e), newRmCmd(e), newIncusCmd(e),
		newExportCmd(e), newImportCmd(e), newExposeCmd(e))
	addRemoteFlags(root, e)
	registerCompletions(root, e)
	return root
}

// unsuggested are the verbs a typo never proposes: they destroy, overwrite or need root,
// and a hurried "yes, that one" must not run them.
var unsuggested = map[string]bool{
	"rm": true, "restore": true, "stop": true, "rename": true, "teardown-host": true, "setup-host": true,
	"migrate-host": true, "grant": true, "revoke": true, "incus": true, "expose": true, "import": true,
}

// safeSuggestions drops the verbs a typo must not lead to.
func safeSuggestions(s []string) []string {
	var out []string
	for _, v := range s {
		if !unsuggested[v] {
			out = append(out, v)
		}
	}
	return out
}

// newVersionCmd is 'box version', as 'box --version'.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "print box's version",
		Example: "  box version",
		GroupID: groupOther,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			printVersion(cmd.OutOrStdout())
			return nil
		},
	}
}

// newHelpCmd is cobra's help, but an unknown topic is a usage error, not the root help.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:     "help [command]",
		Short:   "help about any command",
		Example: "  box help run",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || (len(args) > 0 && target == root) {
				return root.Args(root, args)
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// noArgs is cobra.NoArgs with a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("run 'box "+cmd.Name()+" --help' for usage", "%s takes no arguments, got %q", cmd.Name(), args[0])
	}
	return nil
}
