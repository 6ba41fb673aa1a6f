package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

func newListCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:        "list",
		Aliases:    []string{"ls"},
		SuggestFor: []string{"ps"},
		Short:      "list the boxes of both backends",
		GroupID:    groupVM,
		Long:       helpText("list"),
		Example:    helpText("list.example"),
		Args:       noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := registry(e).List() // both backends, by name
			if err != nil {
				return err
			}
			out := make([]boxJSON, 0, len(list)) // an empty list is [] in --json, never null
			for _, s := range list {
				out = append(out, boxJSON(s))
			}
			if asJSON {
				return writeJSON(e.stdout, out)
			}
			if len(out) == 0 {
				// An empty table says nothing; say what is (not) there and how to go on.
				// Without incusd a vm box cannot be minted: name the bwrap one (field
				// review, session 18: the vm mint it named failed at once).
				mint := "'box new --name NAME' mints one"
				if incusAbsent(e) != nil {
					mint = "'box new --backend bwrap --name NAME' makes one in this directory"
				}
				fmt.Fprintf(e.stderr, "box: no boxes here yet: %s ('box templates' lists what it can be)\n", mint)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			// LOCATION only on a cluster: where each box lives.
			loc := func(boxJSON) string { return "" }
			if clustered(out) {
				loc = func(s boxJSON) string { return "\t" + dash(s.Location) }
			}
			fmt.Fprintln(tw, "NAME\tBACKEND\tSTATE\tTYPE\tIPV4\tTEMPLATE\tUSER\tCREATED"+loc(boxJSON{Location: "LOCATION"}))
			for _, s := range out {
				created, _ := time.Parse(time.RFC3339, s.Created)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", s.Name, s.Backend, s.State, vm.ShortType(s.Type), dash(s.IPv4),
					dash(s.Template), s.User, stampTime(created), loc(s))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of objects (fields: docs/json.md)")
	return cmd
}

// clustered reports whether any box has a cluster member as its location.
func clustered(list []boxJSON) bool {
	for _, s := range list {
		if s.Location != "" {
			return true
		}
	}
	return false
}

// boxJSON is one element of 'box list --json' and the head of 'box info --json'. The
// field names are a stable interface, documented in docs/json.md: add fields, never
// rename or remove one.
type boxJSON struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Type       string `json:"type"`
	IPv4       string `json:"ipv4"`
	Template   string `json:"template"`
	User       string `json:"user"`
	Origin     string `json:"origin"`
	OriginFrom string `json:"origin_from"`
	Created    string `json:"created"`
	Legacy     bool   `json:"legacy"`
	Location   string `json:"location"` // the cluster member ("" off a cluster)
	Backend    string `json:"backend"`  // "vm" or "bwrap"
	// bwrap boxes: the stamped profile, network tier and working directory ("" for vm)
	Profile string `json:"profile"`
	Network string `json:"network"`
	Workdir string `json:"workdir"`
}
