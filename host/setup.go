package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/backend/incus"
)

// Outcome is what setup-host or teardown-host did to one object.
type Outcome string

const (
	Created Outcome = "created"
	Right   Outcome = "already right"
	Changed Outcome = "changed"
	Removed Outcome = "removed"
	Absent  Outcome = "absent"
)

// Step is one line of setup-host's or teardown-host's report.
type Step struct {
	Object  string  `json:"object"` // e.g. "network boxnet"
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

func (s Step) String() string {
	if s.Detail == "" {
		return fmt.Sprintf("%-28s %s", s.Object, s.Outcome)
	}
	return fmt.Sprintf("%-28s %s: %s", s.Object, s.Outcome, s.Detail)
}

// DefaultUnitDir is where the boot unit goes.
const DefaultUnitDir = "/etc/systemd/system"

// SetupOptions tune setup-host.
type SetupOptions struct {
	Bridge string // default BridgeName
	// Subnet pins the bridge's subnet (10.99.0.0/24 or a gateway CIDR 10.99.0.1/24); it
	// is honoured or refused naming the claimant.
	Subnet string
	// Resolvers are the boxes' upstream resolvers; empty keeps the bridge's current ones,
	// else the host's (HostResolvers), else PublicResolvers.
	Resolvers []netip.Addr
	Pool      string // default DefaultPool
	// UnitDir is where the boot unit is written (default DefaultUnitDir).
	UnitDir string
	// Exe is the box binary the boot unit runs.
	Exe string
	// Conn is the netlink connection of the firewall: nil means nftables.New(), this
	// process's own network namespace.
	Conn *nftables.Conn
	// Remote, when set, is the name of the remote c talks to: the host's addresses and
	// routes are read through the API (RemoteFacts), and the host firewall and boot
	// unit, which live on that host, are reported NotApplied with RemoteFirewallFix.
	Remote string
}

func (o SetupOptions) bridge() string  { return orDefault(o.Bridge, BridgeName) }
func (o SetupOptions) unitDir() string { return orDefault(o.UnitDir, DefaultUnitDir) }

func (o SetupOptions) conn() (*nftables.Conn, error) {
	if o.Conn != nil {
		return o.Conn, nil
	}
	return nftables.New()
}

// Setup builds (or corrects) the whole isolation stack: the ACL, the bridge, the
// placement profile, the host firewall and its boot unit, in that order (the bridge
// names the ACL; the ACL's sibling drop comes from the bridge's gateway). Re-running
// changes nothing when everything is right. It returns one step per object, also when
// it fails part way.
func Setup(ctx context.Context, c *incus.Client, o SetupOptions) ([]Step, error) {
	br := o.bridge()
	var steps []Step
	existing, err := c.Network(ctx, br)
	switch {
	case incus.IsNotFound(err):
		existing = nil
	case err != nil:
		return steps, err
	case existing.Type != "bridge" || !existing.Managed:
		return steps, fmt.Errorf("network %s exists but is not a managed bridge (type %s): rename or remove it", br, existing.Type)
	}
	var facts HostFacts
	claims := func() ([]Claim, error) { return Claims(br) }
	if o.Remote != "" {
		rf, rc, err := RemoteFacts(ctx, c, br)
		if err != nil {
			return steps, err
		}
		facts, claims = rf, func() ([]Claim, error) { return rc, nil }
	} else if facts, err = LocalFacts(); err != nil {
		return steps, err
	}
	gw, err := chooseGateway(ctx, c, br, existing, o.Subnet, claims)
	if err != nil {
		return steps, err
	}
	resolvers := o.Resolvers
	if len(resolvers) == 0 && existing != nil {
		resolvers = ServersOf(existing.Config["raw.dnsmasq"])
	}
	if len(resolvers) == 0 {
		resolvers = HostResolvers()
	}
	if len(resolvers) == 0 {
		resolvers = PublicResolvers
	}
	plan, err := PlanStack(Stack{Bridge: br, Gateway: gw, Resolvers: resolvers, HostAddrs: facts.Addrs, HostNets: facts.Nets, Pool: o.Pool})
	if err != nil {
		return steps, err
	}

	cf, err := readCluster(ctx, c)
	if err != nil {
		return steps, err
	}
	if existing != nil && existing.Status == "Pending" {
		return steps, fmt.Errorf("network %s is only pending on the cluster (defined on some members, never created): remove it ('incus network delete %s') and run box setup-host again", br, br)
	}

	st, err := ensureACL(ctx, c, plan.ACL)
	steps = append(steps, st)
	if err != nil {
		return steps, err
	}
	st, err = ensureNetwork(ctx, c, plan.Network, existing, cf.members)
	steps = append(steps, st)
	if err != nil {
		return steps, err
	}
	st, err = ensureProfile(ctx, c, plan.Profile)
	steps = append(steps, st)
	if err != nil {
		return steps, err
	}
	// On a cluster every other member's host gets its firewall from box run there.
	for _, m := range cf.others(o.Remote != "") {
		steps = append(steps, Step{Object: "nftables on member " + m, Outcome: NotApplied, Detail: MemberFirewallFix(m)})
	}
	if o.Remote != "" {
		if len(cf.members) > 0 {
			return steps, nil
		}
		return append(steps, Step{Object: "nftables, boot unit", Outcome: NotApplied, Detail: RemoteFirewallFix(o.Remote)}), nil
	}
	conn, err := nftables.New()
	if err != nil {
		return steps, err
	}
	st, err = EnsureFirewall(conn, br, gw.String())
	steps = append(steps, st)
	if err != nil {
		return steps, err
	}
	st, err = EnsureUnit(o.unitDir(), o.Exe, br, gw.String())
	steps = append(steps, st)
	return steps, err
}

// chooseGateway keeps the bridge's address when it exists (moving a live bridge would
// re-address every box), unless a different subnet is pinned; else it picks a free one.
func chooseGateway(ctx context.Context, c *incus.Client, br string, existing *incus.Network, pinned string, hostClaims func() ([]Claim, error)) (netip.Prefix, error) {
	if existing != nil {
		if cur, err := ParseGateway(existing.Config["ipv4.address"]); err == nil {
			if pinned == "" {
				return cur, nil
			}
			if p, err := netip.ParsePrefix(pinned); err == nil && p.Masked() == cur.Masked() {
				return cur, nil
			}
		}
	}
	claims, err := hostClaims()
	if err != nil {
		return netip.Prefix{}, err
	}
	nc, err := NetworkClaims(ctx, c, br)
	if err != nil {
		return netip.Prefix{}, err
	}
	return ChooseSubnet(append(claims, nc...), pinned)
}

// NetworkClaims lists the subnets of Incus's other managed networks (they claim their
// range even while down, without a route).
func NetworkClaims(ctx context.Context, c *incus.Client, bridge string) ([]Claim, error) {
	ns, err := c.Networks(ctx)
	if err != nil {
		return nil, err
	}
	var out []Claim
	for _, n := range ns {
		if n.Name == bridge || !n.Managed {
			continue
		}
		if p, err := netip.ParsePrefix(n.Config["ipv4.address"]); err == nil {
			out = append(out, Claim{p.Masked(), fmt.Sprintf("the Incus network %s (%s)", n.Name, p)})
		}
	}
	return out, nil
}

// LocalFacts returns the addresses and subnets of this network namespace's interfaces.
func LocalFacts() (HostFacts, error) {
	nets, err := LocalNets()
	return HostFacts{Addrs: LocalAddrs(), Nets: nets}, err
}

// LocalNets returns the subnets of this network namespace's interfaces, each with its
// interface's name. An interface it cannot read is an error: its LAN would be left open.
func LocalNets() ([]HostNet, error) {
	var out []HostNet
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list the host's interfaces: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("the host's interface %s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if p, ok := ipnetPrefix(n); ok {
					out = append(out, HostNet{Prefix: p, Iface: ifc.Name})
				}
			}
		}
	}
	return out, nil
}

// LocalAddrs returns the addresses of this network namespace's interfaces.
func LocalAddrs() []netip.Addr {
	var out []netip.Addr
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if p, ok := ipnetPrefix(n); ok {
				out = append(out, p.Addr())
			}
		}
	}
	return out
}

// ServersOf returns the server= addresses of a raw.dnsmasq.
func ServersOf(raw string) []netip.Addr {
	var out []netip.Addr
	for _, l := range strings.Split(raw, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "server="); ok {
			if a, err := netip.ParseAddr(v); err == nil {
				out = append(out, a)
			}
		}
	}
	return out
}

func ensureACL(ctx context.Context, c *incus.Client, want incus.NetworkACL) (Step, error) {
	st := Step{Object: "network ACL " + want.Name}
	got, err := c.NetworkACLByName(ctx, want.Name)
	if incus.IsNotFound(err) {
		st.Outcome = Created
		st.Detail = fmt.Sprintf("%d egress drops, default ingress drop", len(want.Egress))
		return st, c.CreateNetworkACL(ctx, want)
	}
	if err != nil {
		return st, err
	}
	d := ACLDiff(want, *got)
	if len(d) == 0 && got.Description == want.Description {
		st.Outcome = Right
		return st, nil
	}
	st.Outcome, st.Detail = Changed, strings.Join(d, "; ")
	if st.Detail == "" {
		st.Detail = "description"
	}
	want.Config = got.Config
	return st, c.UpdateNetworkACL(ctx, want)
}

// ACLDiff lists how got's rules differ from want's: missing rules, and rules want does
// not have.
func ACLDiff(want, got incus.NetworkACL) []string {
	var out []string
	for _, dir := range []struct {
		name      string
		want, got []incus.ACLRule
	}{{"egress", want.Egress, got.Egress}, {"ingress", want.Ingress, got.Ingress}} {
		for _, r := range dir.want {
			if !slices.Contains(dir.got, r) {
				out = append(out, fmt.Sprintf("%s rule missing: %s", dir.name, RuleString(r)))
			}
		}
		for _, r := range dir.got {
			if !slices.Contains(dir.want, r) {
				out = append(out, fmt.Sprintf("%s rule not planned: %s", dir.name, RuleString(r)))
			}
		}
	}
	return out
}

// RuleString renders an ACL rule as `incus network acl rule add` takes it.
func RuleString(r incus.ACLRule) string {
	var b strings.Builder
	b.WriteString(r.Action)
	for _, kv := range [][2]string{{"source", r.Source}, {"destination", r.Destination}, {"protocol", r.Protocol},
		{"source_port", r.SourcePort}, {"destination_port", r.DestinationPort}, {"state", r.State}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if r.Description != "" {
		fmt.Fprintf(&b, " (%s)", r.Description)
	}
	return b.String()
}

// ensureNetwork creates or converges the bridge; members is the cluster's (nil off one),
// where a new network is defined on each member first.
func ensureNetwork(ctx context.Context, c *incus.Client, want incus.Network, got *incus.Network, members []string) (Step, error) {
	st := Step{Object: "network " + want.Name}
	if got == nil {
		st.Outcome = Created
		st.Detail = fmt.Sprintf("bridge %s, IPv4 only, NAT, dns.mode=none", want.Config["ipv4.address"])
		if len(members) > 0 {
			st.Detail += ", on every member (" + strings.Join(members, ", ") + ")"
			return st, createClusterNetwork(ctx, c, want, members)
		}
		return st, c.CreateNetwork(ctx, want)
	}
	d := ConfigDiff(want.Config, got.Config)
	if len(d) == 0 && got.Description == want.Description {
		st.Outcome = Right
		return st, nil
	}
	st.Outcome, st.Detail = Changed, strings.Join(d, "; ")
	if st.Detail == "" {
		st.Detail = "description"
	}
	// Keys box does not plan (bridge.mtu, DHCP ranges, ...) stay as the operator set them.
	cfg := maps.Clone(got.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	maps.Copy(cfg, want.Config)
	for k := range cfg {
		if strings.HasPrefix(k, "volatile.") {
			delete(cfg, k)
		}
	}
	want.Config = cfg
	return st, c.UpdateNetwork(ctx, want)
}

// ConfigDiff lists the planned keys whose value differs in got, as "key: got → want".
func ConfigDiff(want, got map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: unset → %s", k, quoteIfNL(want[k])))
		case g != want[k]:
			out = append(out, fmt.Sprintf("%s: %s → %s", k, quoteIfNL(g), quoteIfNL(want[k])))
		}
	}
	return out
}

func quoteIfNL(s string) string {
	if strings.ContainsAny(s, "\n ") || s == "" {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func ensureProfile(ctx context.Context, c *incus.Client, want incus.Profile) (Step, error) {
	st := Step{Object: "profile " + want.Name}
	got, err := c.Profile(ctx, want.Name)
	if incus.IsNotFound(err) {
		st.Outcome = Created
		st.Detail = "NIC eth0 on " + want.Devices["eth0"]["network"] + " with port isolation, MAC and IPv4 filtering, root disk on pool " + want.Devices["root"]["pool"]
		return st, c.CreateProfileFrom(ctx, want)
	}
	if err != nil {
		return st, err
	}
	d := ProfileDiff(want, *got)
	if len(d) == 0 && got.Description == want.Description {
		st.Outcome = Right
		return st, nil
	}
	st.Outcome, st.Detail = Changed, strings.Join(d, "; ")
	if st.Detail == "" {
		st.Detail = "description"
	}
	return st, c.ReplaceProfile(ctx, want)
}

// ProfileDiff lists how got differs from the planned placement profile: it must carry
// exactly the planned devices and no config.
func ProfileDiff(want, got incus.Profile) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(got.Config)) {
		out = append(out, fmt.Sprintf("config %s=%s not planned (the profile carries the NIC and the root disk only)", k, got.Config[k]))
	}
	names := map[string]bool{}
	for n := range want.Devices {
		names[n] = true
	}
	for n := range got.Devices {
		names[n] = true
	}
	keys := slices.Sorted(maps.Keys(names))
	for _, n := range keys {
		w, g := want.Devices[n], got.Devices[n]
		switch {
		case g == nil:
			out = append(out, fmt.Sprintf("device %s missing", n))
		case w == nil:
			out = append(out, fmt.Sprintf("device %s (%s) not planned", n, g["type"]))
		case !reflect.DeepEqual(w, g):
			out = append(out, fmt.Sprintf("device %s: %s, want %s", n, devString(g), devString(w)))
		}
	}
	return out
}

func devString(d map[string]string) string {
	ks := slices.Sorted(maps.Keys(d))
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k + "=" + d[k]
	}
	return strings.Join(parts, " ")
}

// GatewayError: the bridge's gateway, which the firewall is planned from, could not be
// read from incusd (ReapplyFirewall without a gateway given).
type GatewayError struct{ Err error }

func (e *GatewayError) Error() string { return e.Err.Error() }
func (e *GatewayError) Unwrap() error { return e.Err }

// ReapplyFirewall is setup-host's firewall-only path, what the boot unit runs: only the
// host firewall of bridge, planned from gatewayCIDR, else from the bridge's address as
// incusd has it (a *GatewayError when that cannot be read). It returns the firewall's
// step, also when it fails.
func ReapplyFirewall(ctx context.Context, c *incus.Client, bridge, gatewayCIDR string) ([]Step, error) {
	gw := gatewayCIDR
	if gw == "" {
		n, err := c.Network(ctx, bridge)
		if err != nil {
			return nil, &GatewayError{err}
		}
		gw = n.Config["ipv4.address"]
	}
	conn, err := nftables.New()
	if err != nil {
		return nil, err
	}
	st, err := EnsureFirewall(conn, bridge, gw)
	return []Step{st}, err
}

// SystemdRunning: systemd is this machine's init, so the boot unit runs at boot.
func SystemdRunning() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// EnsureFirewall applies the host firewall for the bridge when the kernel's box tables
// differ from the plan, and reports what it found: the boot unit's step and setup-host's.
func EnsureFirewall(conn *nftables.Conn, bridge, gatewayCIDR string) (Step, error) {
	st := Step{Object: "nftables bridge/inet " + TableName}
	rs, err := PlanFirewall(bridge, gatewayCIDR)
	if err != nil {
		return st, err
	}
	drift, err := Verify(conn, rs)
	if err != nil {
		return st, err
	}
	if len(drift) == 0 {
		st.Outcome = Right
		return st, nil
	}
	st.Outcome, st.Detail = Changed, drift[0]
	if len(drift) > 1 {
		st.Detail += fmt.Sprintf(" (and %d more)", len(drift)-1)
	}
	if strings.HasSuffix(drift[0], ": missing") && len(drift) == 2 && strings.HasSuffix(drift[1], ": missing") {
		st.Outcome, st.Detail = Created, ""
	}
	if err := Apply(conn, rs); err != nil {
		return st, err
	}
	if drift, err := Verify(conn, rs); err != nil || len(drift) > 0 {
		return st, errors.Join(err, fmt.Errorf("firewall applied but differs: %s", strings.Join(drift, "; ")))
	}
	return st, nil
}

// PlanFirewall is Plan with the kernel's bridge-meta support detected.
func PlanFirewall(bridge, gatewayCIDR string) (Ruleset, error) {
	gw, err := ParseGateway(gatewayCIDR)
	if err != nil {
		return Ruleset{}, err
	}
	meta, err := DetectBridgeMeta()
	if err != nil {
		return Ruleset{}, err
	}
	return Plan(Inputs{Bridge: bridge, Gateway: gw, BridgeMeta: meta})
}

// UnitFile is the boot unit: a oneshot that re-applies the host firewall early at boot,
// from the bridge name and gateway it carries, so it needs neither incusd nor the
// network up. setup-host rewrites it when the bridge's address changes.
func UnitFile(exe, bridge, gatewayCIDR string) string {
	return fmt.Sprintf(`# Written by box setup-host: re-applies the box host firewall at boot.
[Unit]
Description=box host firewall (nftables tables bridge box and inet box)
DefaultDependencies=no
After=local-fs.target
Before=network-pre.target incus.service
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%s setup-host --firewall-only --bridge %s --gateway %s

[Install]
WantedBy=multi-user.target
`, systemdQuote(exe), bridge, gatewayCIDR)
}

func systemdQuote(s string) string {
	if strings.ContainsAny(s, " \t\"'\\") {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	return s
}

// UnitWants is the symlink that enables the unit (what systemctl enable makes).
func UnitWants(unitDir string) string {
	return filepath.Join(unitDir, "multi-user.target.wants", UnitName)
}

// EnsureUnit writes the boot unit and enables it (the multi-user.target.wants symlink,
// as systemctl enable does; systemd reads it at the next boot, no daemon needed now).
func EnsureUnit(unitDir, exe, bridge, gatewayCIDR string) (Step, error) {
	path := filepath.Join(unitDir, UnitName)
	st := Step{Object: "boot unit " + path}
	if exe == "" {
		return st, errors.New("boot unit: the box binary's path is unknown")
	}
	want := UnitFile(exe, bridge, gatewayCIDR)
	got, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st.Outcome = Created
	case err != nil:
		return st, err
	case string(got) != want:
		st.Outcome, st.Detail = Changed, "content"
	}
	if st.Outcome != "" {
		if err := os.MkdirAll(unitDir, 0o755); err != nil {
			return st, err
		}
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			return st, err
		}
	}
	link := UnitWants(unitDir)
	if t, err := os.Readlink(link); err != nil || t != path {
		if st.Outcome == "" {
			st.Outcome, st.Detail = Changed, "enabled"
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return st, err
		}
		_ = os.Remove(link)
		if err := os.Symlink(path, link); err != nil {
			return st, err
		}
	}
	if st.Outcome == "" {
		st.Outcome = Right
	}
	return st, nil
}
