package main

import (
	"fmt"
	"slices"

	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
	"github.com/spf13/cobra"
)

// completionShells are the shells box writes completion scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func newCompletionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:                   "completion bash|zsh|fish",
		Short:                 "print the shell completion script for bash, zsh or fish",
		Long:                  helpText("completion"),
		Example:               helpText("completion.example"),
		GroupID:               groupOther,
		ValidArgs:             completionShells,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("run 'box completion --help' for usage", "completion takes one shell: bash, zsh or fish")
			}
			if !slices.Contains(completionShells, args[0]) {
				return usagef("the shells are bash, zsh and fish", "no completion for shell %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(e.stdout, true)
			case "zsh":
				return root.GenZshCompletion(e.stdout)
			default:
				return root.GenFishCompletion(e.stdout, true)
			}
		},
	}
}

// registerCompletions teaches the completion scripts the values of flags that name
// things: profiles, templates, network tiers, backends. Names come from the same lists
// 'box profiles' and 'box templates' print; a broken user file completes nothing.
func registerCompletions(root *cobra.Command, e *env) {
	run, _, err := root.Find([]string{"run"})
	if err != nil || run == root {
		return
	}
	fixed := func(vals ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
	}
	// described offers what list finds under the configuration home, with descriptions.
	described := func(list func(string) ([][2]string, error)) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			got, _ := list(e.configHome()) // a broken user file completes nothing: got is nil
			var out []cobra.Completion
			for _, c := range got {
				out = append(out, cobra.CompletionWithDesc(c[0], c[1]))
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	for flag, fn := range map[string]cobra.CompletionFunc{
		"profile":  described(profiles.Choices),
		"template": described(templates.Choices),
		"network":  fixed(policy.TierNames()...),
		"backend":  fixed(profiles.BackendBwrap), // box run is bwrap's
	} {
		register(run, flag, fn)
		if flag == "backend" {
			fn = fixed(profiles.BackendVM, profiles.BackendBwrap)
		}
		if nu, _, err := root.Find([]string{"new"}); err == nil && nu != root {
			register(nu, flag, fn)
		}
	}
	// box drill's tier flags: the same one list.
	if d, _, err := root.Find([]string{"drill"}); err == nil && d != root {
		register(d, "network", fixed(policy.TierNames()...))
		register(d, "expect", fixed(policy.TierNames()...))
	}
}

func register(cmd *cobra.Command, flag string, fn cobra.CompletionFunc) {
	if cmd.Flags().Lookup(flag) == nil {
		return
	}
	if err := cmd.RegisterFlagCompletionFunc(flag, fn); err != nil {
		panic(fmt.Sprintf("completion for --%s: %v", flag, err)) // a programming error
	}
}
