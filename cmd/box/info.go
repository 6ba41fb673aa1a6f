package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

func newInfoCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := vmVerb(e, "info BOX", "show a box: state, address, template, user, provenance, snapshots", boxArgs(1, "one box"),
		func(cmd *cobra.Command, args []string) error {
			bi, err := e.lookup().Info(args[0]) // box info's own request asks the vm backend
			info := infoJSONOf(bi)
			switch {
			case err != nil:
				return err
			case asJSON:
				return writeJSON(e.stdout, info)
			}
			return printInfo(e, info)
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object (fields: docs/json.md)")
	return cmd
}

// printInfo is box info's table: a vm box's type, address and resources, a bwrap box's
// profile, tier, directories and host ports.
func printInfo(e *env, info infoJSON) error {
	bw := info.Backend == profiles.BackendBwrap
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("name", info.Name)
	row("backend", info.Backend)
	row("state", info.State)
	origin, created, exposed := dash(info.Origin), dash(info.Created), ""
	if bw {
		row("template", info.Template)
		row("profile", info.Profile)
		row("network", info.Network)
		row("workdir", info.Workdir)
		row("home", info.Home)
		origin, created, exposed = info.Origin, info.Created, " (while a session runs)"
	} else {
		row("type", info.Type)
		row("ipv4", dash(info.IPv4))
		if info.Location != "" {
			row("location", info.Location) // its cluster member
		}
		row("template", dash(info.Template))
		row("user", info.User)
	}
	if info.OriginFrom != "" {
		origin += " of " + info.OriginFrom
	}
	if info.Legacy {
		origin = "claudebox (legacy)"
	}
	row("origin", origin)
	row("created", created)
	if !bw && info.Imported != "" {
		row("imported", fmt.Sprintf("%s (%d time(s), last %s)", info.Imported, info.ImportedCount, info.ImportedLast))
	}
	if !bw {
		row("resources", fmt.Sprintf("cpu %s, memory %s, disk %s", dash(info.CPU), dash(info.Memory), dash(info.Disk)))
	}
	for _, x := range info.Exposed {
		row("exposed", fmt.Sprintf("127.0.0.1:%d -> port %d%s", x.HostPort, x.Port, exposed))
	}
	for _, h := range info.HostPorts { // a bwrap box's profile's host_ports (publish.go)
		row("host port", fmt.Sprintf("host.box.internal:%d -> the host's 127.0.0.1:%d (at every session)", h, h))
	}
	if len(info.Snapshots) == 0 {
		row("snapshots", "none")
	} else {
		var s []string
		for _, sn := range info.Snapshots {
			s = append(s, sn.Name)
		}
		row("snapshots", strings.Join(s, ", "))
		row("clone one", fmt.Sprintf("box new --name NAME --from %s/%s", info.Name, s[len(s)-1]))
	}
	return tw.Flush()
}

// infoJSON is 'box info --json': the fields of 'box list --json', then resources and
// snapshots. Stable, documented in docs/json.md.
type infoJSON struct {
	boxJSON
	CPU       string         `json:"cpu"`
	Memory    string         `json:"memory"`
	Disk      string         `json:"disk"`
	Snapshots []snapshotJSON `json:"snapshots"`
	// Exposed are the box's doors from the host's loopback (box expose).
	Exposed []vm.Exposure `json:"exposed"`
	// HostPorts: a bwrap box's profile's host_ports, reached at every session ([] for vm).
	HostPorts []int `json:"host_ports"`
	// Imported, ImportedLast and ImportedCount record box import's trips ("", "", 0
	// for a box never imported).
	Imported      string `json:"imported"`
	ImportedLast  string `json:"imported_last"`
	ImportedCount int    `json:"imported_count"`
	Home          string `json:"home"` // a bwrap box's home directory on the host ("" for vm)
}

type snapshotJSON struct {
	Name    string `json:"name"`
	Created string `json:"created"`
}

// infoJSONOf is box info --json of what a backend answered.
func infoJSONOf(i backend.Info) infoJSON {
	out := infoJSON{
		boxJSON: boxJSON(i.Summary), CPU: i.CPU, Memory: i.Memory, Disk: i.Disk,
		Snapshots: []snapshotJSON{}, Exposed: []vm.Exposure{}, HostPorts: append([]int{}, i.HostPorts...),
		Imported: i.Imported, ImportedLast: i.ImportedLast, ImportedCount: i.ImportedCount, Home: i.Home,
	}
	for _, s := range i.Snapshots {
		out.Snapshots = append(out.Snapshots, snapshotJSON(s))
	}
	for _, x := range i.Exposed {
		out.Exposed = append(out.Exposed, vm.Exposure(x))
	}
	return out
}
