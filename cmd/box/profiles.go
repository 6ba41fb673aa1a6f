package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/internal/catalog"
	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

func newProfilesCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "profiles",
		Short:   "list profiles and where each comes from",
		GroupID: groupModel,
		Long:    helpText("profiles"),
		Example: helpText("profiles.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ps, err := profiles.List(profiles.Dir(e.configHome()))
			broken, err := brokenEntries(err)
			if err != nil {
				return withHint(err, backend.FileHint("profile file", err))
			}
			defer reportBroken(e, broken, &err, func(err error) error { return withHint(err, backend.FileHint("profile file", err)) })
			if asJSON {
				if len(broken) > 0 {
					return nil // a partial array a script could take for the whole: nothing (reportBroken says why)
				}
				out := make([]profileJSON, 0, len(ps))
				for _, p := range ps {
					out = append(out, newProfileJSON(p))
				}
				return writeJSON(e.stdout, out)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tBACKEND\tNETWORK\tTEMPLATE\tSOURCE\tDESCRIPTION")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Backend, p.Network, p.Template, p.Source, p.Description)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of objects (fields: docs/json.md)")
	return cmd
}

// profileJSON is one element of 'box profiles --json'. The field names are a stable
// interface, documented in docs/json.md: add fields, never rename or remove one.
type profileJSON struct {
	Name            string      `json:"name"`
	Source          string      `json:"source"`
	Description     string      `json:"description"`
	Backend         string      `json:"backend"`
	Template        string      `json:"template"`
	Network         string      `json:"network"`
	Env             []string    `json:"env"`
	Tools           []string    `json:"tools"`
	Command         []string    `json:"command"`
	AuthPassthrough bool        `json:"auth_passthrough"`
	Mounts          []mountJSON `json:"mounts"`
	CPU             string      `json:"cpu"`
	Memory          string      `json:"memory"`
	Disk            string      `json:"disk"`
	Pids            int         `json:"pids"` // 0: the default
}

type mountJSON struct {
	Path   string `json:"path"`
	Target string `json:"target"`
	Mode   string `json:"mode"`
}

func newProfileJSON(p *profiles.Profile) profileJSON {
	mounts := make([]mountJSON, 0, len(p.Mounts))
	for _, m := range p.Mounts { // Mode is never empty: profiles.Parse fills in "ro"
		mounts = append(mounts, mountJSON{Path: m.Path, Target: m.Target, Mode: m.Mode})
	}
	return profileJSON{
		Name:            p.Name,
		Source:          p.Source,
		Description:     p.Description,
		Backend:         p.Backend,
		Template:        p.Template,
		Network:         string(p.Network),
		Env:             nonNil(p.Env),
		Tools:           nonNil(p.Tools),
		Command:         nonNil(p.Command),
		AuthPassthrough: p.AuthPassthrough,
		Mounts:          mounts,
		CPU:             p.CPU,
		Memory:          p.Memory,
		Disk:            p.Disk,
		Pids:            pidsOf(p),
	}
}

func pidsOf(p *profiles.Profile) int {
	if p.Pids == nil {
		return 0
	}
	return *p.Pids
}

// brokenEntries splits a listing's error: the entries a *catalog.BrokenError names
// (the listing shows the rest), else err itself, returned.
func brokenEntries(err error) ([]error, error) {
	var b *catalog.BrokenError
	if errors.As(err, &b) {
		return b.Errs, nil
	}
	return nil, err
}

// reportBroken says each broken entry of a listing on stderr, as an error with its hint,
// once the listing is printed, and makes the verb exit 1 (*errp, when the listing itself
// succeeded): what box cannot read is said, never skipped.
func reportBroken(e *env, broken []error, errp *error, hinted func(error) error) {
	if len(broken) == 0 {
		return
	}
	for _, b := range broken {
		report(e.stderr, hinted(b))
	}
	if *errp == nil {
		*errp = &exitError{code: exitFail}
	}
}
