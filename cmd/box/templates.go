package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/templates"
	"github.com/spf13/cobra"
)

func newTemplatesCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "templates",
		Short:   "list templates with their descriptions",
		GroupID: groupModel,
		Long:    helpText("templates"),
		Example: helpText("templates.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ts, err := templates.List(templates.Dir(e.configHome()))
			broken, err := brokenEntries(err)
			if err != nil {
				return templateFileErr(err)
			}
			defer reportBroken(e, broken, &err, templateFileErr)
			if asJSON {
				if len(broken) > 0 {
					return nil // a partial array a script could take for the whole: nothing (reportBroken says why)
				}
				out := make([]templateJSON, 0, len(ts))
				for _, t := range ts {
					out = append(out, newTemplateJSON(t))
				}
				return writeJSON(e.stdout, out)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Source, t.Description)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of objects (fields: docs/json.md)")
	return cmd
}

// templateJSON is one element of 'box templates --json'. The field names are a stable
// interface, documented in docs/json.md: add fields, never rename or remove one.
type templateJSON struct {
	Name          string   `json:"name"`
	Source        string   `json:"source"`
	Description   string   `json:"description"`
	Image         string   `json:"image"`
	User          string   `json:"user"`
	CPU           string   `json:"cpu"`
	Memory        string   `json:"memory"`
	Disk          string   `json:"disk"`
	RequireVM     bool     `json:"require_vm"`
	Autostart     bool     `json:"autostart"`
	BootstrapRole string   `json:"bootstrap_role"`
	Tools         []string `json:"tools"`
	Command       []string `json:"command"`
	UserData      string   `json:"user_data"`
	Notes         string   `json:"notes"`
}

func newTemplateJSON(t *templates.Template) templateJSON {
	return templateJSON{
		Name:          t.Name,
		Source:        t.Source,
		Description:   t.Description,
		Image:         t.Image,
		User:          t.User,
		CPU:           t.CPU,
		Memory:        t.Memory,
		Disk:          t.Disk,
		RequireVM:     t.RequireVM,
		Autostart:     t.Autostart,
		BootstrapRole: t.BootstrapRole,
		Tools:         nonNil(t.Tools),
		Command:       nonNil(t.Command),
		UserData:      t.UserData,
		Notes:         t.Notes,
	}
}

// writeJSON prints v as indented JSON and a newline: the --json output of listing verbs.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// nonNil makes an absent list [] in JSON, never null, so consumers need no null check.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// templateFileErr gives a template file's error the hint to fix it, unless it has its own.
func templateFileErr(err error) error {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return err
	}
	return withHint(err, backend.FileHint("template", err))
}
