package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

type doctorOptions struct {
	json    bool
	unitDir string
}

func newDoctorCmd(e *env) *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:     "doctor [--json]",
		Short:   "check the vm backend's isolation stack on this host, with a fix for each failure",
		GroupID: groupHost,
		Long: `Check every invariant of the isolation stack live, one line each: the bridge exists,
IPv4 with NAT, ipv6.address=none, dns.mode=none, dnsmasq's dhcp-ignore-names and upstream
resolver, the ACL's rules and that it is attached (default ingress drop), the placement
profile (the NIC with port isolation and the root disk, nothing else), the host firewall
tables against the plan, bridge-meta support, ports the firewall's fallback also
catches (warning), the boot unit, every box on the placement profile only, leftovers
of claudebox (warning), and every box's doors (box expose): loopback only, no other
proxy device, and each user's grant (box grant): their project's restrictions exactly as
box set them (a limits.* key the operator added is no drift), its profiles, their one
confined certificate, and no project of incus-user's own loose making. Run by a granted
user, doctor checks their side: incus-user's socket, their project, the placement
profile. Each failure comes with its fix. Exit 1 on any failure.`,
		Example: `  box doctor
  box doctor --json      # [{check, status, detail, fix}]`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDoctor(e, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the checks as a JSON array")
	cmd.Flags().StringVar(&o.unitDir, "unit-dir", host.DefaultUnitDir, "where setup-host wrote the boot unit")
	return cmd
}

func runDoctor(e *env, o *doctorOptions) error {
	if err := incusAbsent(e); err != nil {
		return err
	}
	ctx, cancel := hostContext()
	defer cancel()
	if e.remoteName() == "" && host.IsUserSocket(e.localSocket()) {
		// A granted user: their side of it (host/grantdoctor.go).
		uc := e.localClient()
		checks := host.UserDoctor(ctx, uc, vm.Placement(e.getenv), currentUser())
		uc.Close()
		return printChecks(e, o, checks)
	}
	c := hostClient(e)
	defer c.Close()
	checks := host.Doctor(ctx, c, host.DoctorOptions{UnitDir: o.unitDir, Exe: boxExe(), Remote: c.RemoteName()})
	checks = append(checks, exposureCheck(ctx, c))
	if c.RemoteName() == "" {
		checks = append(checks, grantHost(e, c).GrantChecks(ctx)...)
	}
	return printChecks(e, o, checks)
}

// printChecks prints doctor's lines (or --json) and fails when any check failed.
func printChecks(e *env, o *doctorOptions, checks []host.Check) error {
	if o.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(checks); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, ck := range checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ck.Status, ck.Name, ck.Detail)
			if ck.Fix != "" && ck.Status != host.OK {
				fmt.Fprintf(tw, "\t\tfix: %s\n", ck.Fix)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	n := 0
	for _, ck := range checks {
		if ck.Status == host.Fail {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", n, len(checks))
	}
	fmt.Fprintf(e.stderr, "box: doctor: all %d checks passed\n", len(checks))
	return nil
}

// CheckExposures is doctor's line for the doors of the boxes.
const CheckExposures = "exposures"

// exposureCheck lists every box's doors from the host's loopback, and fails on a proxy
// device of a box that is not one of box expose's (a listener beyond 127.0.0.1, added
// through incus): it is a door into the box from wherever it listens.
func exposureCheck(ctx context.Context, c *incus.Client) host.Check {
	list, err := c.ListBoxes(ctx)
	if err != nil {
		return host.Check{Name: CheckExposures, Status: host.Fail, Detail: err.Error()}
	}
	var doors, foreign []string
	for _, b := range list {
		exp, other := vm.Exposures(b.Devices)
		for _, x := range exp {
			doors = append(doors, fmt.Sprintf("127.0.0.1:%d -> %s:%d", x.HostPort, b.Name, x.Port))
		}
		for _, d := range other {
			foreign = append(foreign, fmt.Sprintf("%s (listen %s)", b.Name+"/"+d, b.Devices[d]["listen"]))
		}
	}
	if len(foreign) > 0 {
		return host.Check{Name: CheckExposures, Status: host.Fail,
			Detail: "proxy devices box did not open: " + strings.Join(foreign, ", "),
			Fix:    "remove each (box incus BOX -- config device remove {} DEVICE) and use 'box expose', which listens on 127.0.0.1 only"}
	}
	if len(doors) == 0 {
		return host.Check{Name: CheckExposures, Status: host.OK, Detail: "no box has a door from the host"}
	}
	return host.Check{Name: CheckExposures, Status: host.OK, Detail: "loopback only: " + strings.Join(doors, ", ")}
}

// currentUser is the name of the user running box (their uid when it has none).
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
