// Package drill is box's live isolation drill: a suite of probes run INSIDE a sandbox
// built exactly as `box run` builds it, each checking one claim of the isolation contract
// (secret paths invisible, env secrets absent, agent sockets absent, host abstract sockets
// and PIDs unreachable, no privilege escalation, writes confined, and per network tier:
// internet, LAN, host and metadata reachability).
//
// The flow, all of it driven by cmd/box/drill.go (flags and rendering) through Bwrap:
//
//  1. Gather (outside, as the operator) collects facts about the host: which secret paths
//     exist, the host's abstract sockets, gateways, neighbours, addresses and listening
//     ports, a setuid-root binary.
//  2. BuildPlan (pure) turns the facts, the profile's allowlist and the contract into a
//     Plan: one Probe per row, each with what it wants (Blocked, Open or Allowed). The plan
//     holds names and paths only, never a secret value.
//  3. The box binary, bound read-only into the sandbox at ProbePath, runs as the hidden
//     subcommand ProbeSubcommand: ProbeMain reads the plan on stdin, runs every probe and
//     prints Observations as JSON on stdout.
//  4. Settle (outside) checks what only the outside can see (did a write reach the host?),
//     and Judge (pure) turns plan and observations into Results: PASS, BREACH, FAIL, WARN,
//     SKIP or ERROR. Render and RenderJSON print them.
package drill

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/policy"
)

// ProbeSubcommand is the hidden box subcommand that must call ProbeMain; ProbePath is where
// the box binary is bound read-only inside the drill's sandbox.
const (
	ProbeSubcommand = "__probe"
	ProbePath       = "/run/box/probe"
)

// DefaultInternetURL is what the internet probe fetches unless told otherwise.
const DefaultInternetURL = "http://example.com/"

// Network tiers (the same names as the bwrap backend's).
const (
	TierNone     = policy.NetNone
	TierInternet = policy.NetInternet
	TierFull     = policy.NetFull
	// TierAllowlist: named hosts only, through box's proxy.
	TierAllowlist = policy.NetAllowlist
)

// Want is what the contract says about a probe's target.
type Want string

const (
	// Blocked: the target must be invisible, unreachable or impossible. Seen = BREACH.
	Blocked Want = "blocked"
	// Open: the target must work (the working directory is writable, the internet answers
	// in tier internet). Not seen = FAIL.
	Open Want = "open"
	// Allowed: the operator's own choice exposes it (an allowlisted variable, tier full,
	// auth passthrough). Seen = WARN, reported, not a breach.
	Allowed Want = "allowed"
)

// Kind says how the inside runs a probe.
type Kind string

const (
	KindPath       Kind = "path"         // any of Targets visible (lstat succeeds) = seen
	KindEnv        Kind = "env"          // variable Target present = seen
	KindEnvScan    Kind = "env-scan"     // a secret-looking variable not in Targets present = seen
	KindAbstract   Kind = "abstract"     // any abstract socket of Targets connectable = seen
	KindPIDs       Kind = "pids"         // more than MaxProcs processes, or the outer box visible = seen
	KindNoNewPrivs Kind = "no-new-privs" // NoNewPrivs not set = seen
	KindCaps       Kind = "caps"         // any capability in CapInh/Prm/Eff/Amb = seen
	KindSetuid     Kind = "setuid"       // exec of setuid-root Target gives another euid = seen
	KindUserns     Kind = "userns"       // a new user namespace can be made = seen
	KindWrite      Kind = "write"        // creating file Target succeeded (inside, or on the host: see Settle)
	KindHTTP       Kind = "http"         // GET Target answered = seen
	KindTCP        Kind = "tcp"          // any of Targets (addr:port) answered (connected or refused) = seen
	KindGateway    Kind = "gateway"      // the sandbox's own default gateway answers on Ports = seen
	KindNixDaemon  Kind = "nix-daemon"   // a nix-daemon at Target answers the protocol's handshake = seen
	KindUDP        Kind = "udp"          // a datagram to any of Targets (addr:port) left, or was answered = seen
	KindICMP       Kind = "icmp"         // an ICMP echo to any of Targets (addrs) left, or was answered = seen
	// KindHostExec: the inside plants a repository at Targets[0] whose core.fsmonitor
	// writes Targets[1]; Settle, outside, runs git status there as the host would. The
	// marker appearing on the host = seen.
	KindHostExec Kind = "host-exec"
)

// Probe is one row of the drill.
type Probe struct {
	ID       string   `json:"id"`
	Group    string   `json:"group"`
	Name     string   `json:"name"`
	Kind     Kind     `json:"kind"`
	Targets  []string `json:"targets,omitempty"`
	Ports    []int    `json:"ports,omitempty"`
	Want     Want     `json:"want"`
	Expected string   `json:"expected"` // the contract in words, for the table
	// Skip, when set, is why the probe is not run (SKIP with this reason).
	Skip string `json:"skip,omitempty"`
	// HostAbsent: none of the targets exists on the host, so "not seen" proves nothing:
	// SKIP "absent on host" unless it is seen anyway (then BREACH).
	HostAbsent bool `json:"host_absent,omitempty"`
	// Scratch (writes): the target lies in the sandbox's own scratch space (a tmpfs), where
	// a write may succeed; only a write that reaches the host is a breach.
	Scratch bool `json:"scratch,omitempty"`
	// Limit is the bound a limits probe pushes past (tasks or bytes).
	Limit int64 `json:"limit,omitempty"`
	// Plant probes (the protect group): what the inside writes, and what Settle does on
	// the host afterwards (Host, in HostDir) and the marker only the planted command
	// makes; Original is the target's content before the run. Never sent to a secret.
	Plant    []PlantFile `json:"plant,omitempty"`
	Host     string      `json:"host,omitempty"`
	HostDir  string      `json:"host_dir,omitempty"`
	Marker   string      `json:"marker,omitempty"`
	Original string      `json:"original,omitempty"`
	// AuditOnly: the plant may land inside (what it writes stays writable, for work the
	// agent does there); only the host running it is a breach: the post-run audit is
	// the protection.
	AuditOnly bool `json:"audit_only,omitempty"`
}

// Plan is what the inside runs. It holds names, paths and addresses, never a value of the
// operator's environment.
type Plan struct {
	Probes []Probe `json:"probes"`
	// MaxProcs is how many processes the sandbox may show: its pid 1 and the probe.
	MaxProcs int `json:"max_procs"`
	// OuterCmdline is the drill's own command line outside (NULs as spaces): seeing it
	// inside means host PIDs are visible.
	OuterCmdline string `json:"outer_cmdline"`
	// TimeoutMs bounds each network attempt.
	TimeoutMs int `json:"timeout_ms"`
	// Proxied: every TCP connection is accepted locally (tier allowlist's transparent
	// proxy), so a TCP target counts as reached only when it sends data back.
	Proxied bool `json:"proxied,omitempty"`
}

// Facts are what Gather learns about the host, as the operator, outside any sandbox.
type Facts struct {
	Exists       map[string]bool // absolute path -> present on the host (lstat)
	Abstract     []string        // listening abstract unix socket names (without @)
	Gateways     []netip.Addr    // default gateways of the host
	Neighbors    []netip.Addr    // complete entries of the host's ARP table
	Routed       []netip.Addr    // the first address of each network the host routes to (a VPN's)
	Addrs        []netip.Addr    // the host's own addresses
	Listening    []int           // TCP ports listening on a wildcard or a host address
	Setuid       string          // a setuid-root binary in a system directory ("" none)
	Git          string          // git on the host's PATH ("" none): the protect group runs it
	GitCommon    string          // the working directory's common git directory ("" none: GitCommon)
	OuterCmdline string
	// Sockets are the refused socket families and protocols the operator can open here;
	// SessionKeyring and UserKeyring are the operator's session and user keyrings'
	// serials (0: none).
	Sockets        []string
	SessionKeyring int
	UserKeyring    int
	// InternetAddr is the address InternetURL's host resolves to on the host (invalid:
	// unknown): tier allowlist's connection by address, UDP and ICMP target it.
	InternetAddr netip.Addr
}

// Input is everything BuildPlan needs.
type Input struct {
	Home    string // the operator's home directory (its real path)
	Workdir string
	UID     int
	// Tier is the sandbox's network tier; Expect the contract judged ("" = Tier). Tier full
	// judged against the internet contract turns LAN, host and metadata into breaches.
	Tier, Expect policy.Tier
	// Environ is the operator's environment (KEY=VALUE): values are checked with
	// envaudit.Check here and never copied into the plan.
	Environ []string
	// Entered are the names the allowlist lets in (base, profile, --env).
	Entered         []string
	AuthPassthrough bool
	Facts           Facts
	InternetURL     string
	HostPort        int      // 0 = the ports Facts.Listening found
	LANTargets      []string // extra LAN targets, ADDR:PORT
	Nonce           string   // makes write probes' file names unique
	// Fixture is the drill's project in the working directory (nil: the protect group
	// is skipped); Dropped are the protected entries the profile drops (WARN rows).
	Fixture *Fixture
	// AgentState is the agent's state directory on the host (the instance's ~/.claude)
	// and AgentStateInside where the sandbox writes it ("": none; the link-out row skips).
	AgentState, AgentStateInside string
	Dropped                      []string
	// SystemGitCreds are the system git configs that hold a credential on the host
	// (backend/bwrap's Plan.SystemGitCreds; gitcreds.go).
	SystemGitCreds []string
	// BoxDirs are box's own directories (configuration, data, cache), which no sandbox
	// may write (the box-state rows write there).
	BoxDirs []string
	// GitCredVia is the fixture's credential-holding git config as a profile mount shows
	// it at another path than its own ("": none; box refuses such a mount).
	GitCredVia string
	// RWMounts are the profile's read-write mounts of directories outside the working
	// directory, mounted at their own paths (the rw-mount row plants a repository there).
	RWMounts []string
	// ReadOnly are the protected set's read-only paths (the dev shell row's guard).
	ReadOnly []string
	// NixDaemon: the profile opted in to the host's nix-daemon (nix = "daemon").
	NixDaemon bool
	// NixStore: the sandbox has a store of the project's own over the host's (nix =
	// "store"): a write to /nix/store lands there, and only one reaching the host counts.
	NixStore bool
	Kernel   Kernel // the kernel surface: leaked fd, opted-out filter groups, terminal
	// Tier allowlist (judged as allowlist): a URL whose name is allowed (it must work;
	// InternetURL's name must not be allowed), allowed names that resolve to private
	// addresses (DNS rebinding: refused), and the UDP target (default InternetAddr:123).
	AllowedURL string
	RebindURLs []string
	UDPTarget  string
	Limits     Limits // the sandbox's pids, memory and tmpfs bounds (none: no rows)
	// AbstractScoped: the sandbox cannot reach abstract sockets bound outside it
	// (Landlock's scope, which tier full gets where the kernel has it), so the host's
	// are to be unreachable whatever the tier.
	AbstractScoped bool
}

// secretPath is one probe of the secrets group: any of its home-relative (or absolute)
// paths visible is a breach.
type secretPath struct {
	id, name string
	paths    []string
}

// abs makes a policy.Secrets path absolute.
func abs(home, p string) string { return policy.Abs(home, p) }

// socketProbes are the agent and daemon sockets probed (absolute, after expansion).
func socketProbes(home string, uid int, environ []string) []secretPath {
	run := "/run/user/" + strconv.Itoa(uid)
	var gpg []string
	for _, d := range []string{run + "/gnupg", filepath.Join(home, ".gnupg")} {
		for _, s := range []string{"S.gpg-agent", "S.gpg-agent.ssh", "S.gpg-agent.extra", "S.gpg-agent.browser", "S.dirmngr", "S.keyboxd"} {
			gpg = append(gpg, filepath.Join(d, s))
		}
	}
	docker := []string{"/var/run/docker.sock", "/run/docker.sock", run + "/docker.sock", "/run/podman/podman.sock", run + "/podman/podman.sock"}
	if h, ok := strings.CutPrefix(getenv(environ, "DOCKER_HOST"), "unix://"); ok && filepath.IsAbs(h) {
		docker = append(docker, filepath.Clean(h))
	}
	out := []secretPath{
		{"run-user", "/run/user (your runtime dir " + run + ")", []string{"/run/user", run}},
	}
	if s := getenv(environ, "SSH_AUTH_SOCK"); filepath.IsAbs(s) {
		out = append(out, secretPath{"ssh-agent", "ssh-agent socket (SSH_AUTH_SOCK)", []string{filepath.Clean(s)}})
	} else {
		out = append(out, secretPath{"ssh-agent", "ssh-agent socket (SSH_AUTH_SOCK)", nil})
	}
	out = append(out,
		secretPath{"gpg-agent", "gpg-agent sockets", gpg},
		secretPath{"docker-sock", "docker.sock (and podman's)", docker},
	)
	return out
}

// The host's Nix store and its daemon's socket (the daemon builds and fetches on the
// host's network, for anyone who can connect).
const (
	NixStore        = "/nix/store"
	NixDaemonSocket = "/nix/var/nix/daemon-socket/socket"
)

// Candidates lists every host path Gather must stat for BuildPlan.
func Candidates(home string, uid int, environ []string) []string {
	var out []string
	for _, s := range policy.Secrets {
		for _, p := range s.Paths {
			out = append(out, abs(home, p))
		}
	}
	for _, s := range socketProbes(home, uid, environ) {
		out = append(out, s.paths...)
	}
	return append(out, NixStore, NixDaemonSocket)
}

func getenv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// Tiers' contracts for the network group: what each network target is allowed to be.
func contract(expect policy.Tier) (internet, local Want, why string) {
	switch {
	case expect.Offline():
		return Blocked, Blocked, ""
	case expect.OwnNetNS():
		return Open, Blocked, ""
	default: // full: the host's network, named explicitly by the operator
		return Open, Allowed, "exposed (tier full)"
	}
}

// BuildPlan turns in into the probe plan. It is pure: every fact comes in through in.
func BuildPlan(in Input) (Plan, error) {
	if in.Expect == "" {
		in.Expect = in.Tier
	}
	for _, t := range []policy.Tier{in.Tier, in.Expect} {
		if !t.Valid() {
			return Plan{}, fmt.Errorf("network tier %q: want one of %s", t, strings.Join(policy.TierNames(), ", "))
		}
	}
	if in.InternetURL == "" {
		in.InternetURL = DefaultInternetURL
	}
	p := Plan{MaxProcs: 2, OuterCmdline: in.Facts.OuterCmdline, TimeoutMs: 3000, Proxied: in.Tier.Proxied()}
	add := func(pr Probe) { p.Probes = append(p.Probes, pr) }
	exists := func(paths []string) bool {
		for _, q := range paths {
			if in.Facts.Exists[q] {
				return true
			}
		}
		return false
	}

	// Secrets of the real home.
	for _, s := range policy.Secrets {
		var paths []string
		for _, q := range s.Paths {
			paths = append(paths, abs(in.Home, q))
		}
		pr := Probe{ID: "secret:" + s.ID, Group: "secrets", Name: s.What, Kind: KindPath, Targets: paths,
			Want: Blocked, Expected: "invisible", HostAbsent: !exists(paths)}
		if s.ID == "claude-credentials" && in.AuthPassthrough {
			pr.Want, pr.Expected = Allowed, "read-only (auth_passthrough)"
		}
		add(pr)
	}

	// Environment secrets: every host variable that looks secret, plus a scan for any
	// secret-looking variable that entered without being allowlisted.
	entered := map[string]bool{}
	for _, n := range in.Entered {
		entered[n] = true
	}
	var flagged []string
	for _, kv := range in.Environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || envaudit.Check(k, v) == "" {
			continue
		}
		flagged = append(flagged, k)
	}
	slices.Sort(flagged)
	flagged = slices.Compact(flagged)
	for _, k := range flagged {
		pr := Probe{ID: "env:" + k, Group: "env", Name: "env " + k, Kind: KindEnv, Targets: []string{k},
			Want: Blocked, Expected: "absent"}
		if entered[k] {
			pr.Want, pr.Expected = Allowed, "allowlisted (looks secret)"
		}
		add(pr)
	}
	if len(flagged) == 0 {
		add(Probe{ID: "env:host", Group: "env", Name: "env secrets of the host", Kind: KindEnv,
			Want: Blocked, Expected: "absent", Skip: "no secret-looking variable on host"})
	}
	allowed := slices.Sorted(func(yield func(string) bool) {
		for n := range entered {
			if !yield(n) {
				return
			}
		}
	})
	add(Probe{ID: "env:unlisted", Group: "env", Name: "secret-looking env not allowlisted", Kind: KindEnvScan,
		Targets: allowed, Want: Blocked, Expected: "none"})

	// Sockets.
	for _, s := range socketProbes(in.Home, in.UID, in.Environ) {
		pr := Probe{ID: "socket:" + s.id, Group: "sockets", Name: s.name, Kind: KindPath, Targets: s.paths,
			Want: Blocked, Expected: "absent", HostAbsent: !exists(s.paths)}
		if len(s.paths) == 0 {
			pr.Skip = "SSH_AUTH_SOCK not set on host"
		}
		add(pr)
	}

	// Nix: the host's daemon is unreachable unless opted in; the store is read-only.
	daemon := Probe{ID: "nix:daemon", Group: "nix", Name: "host nix-daemon (builds on the host's network)", Kind: KindNixDaemon,
		Targets: []string{NixDaemonSocket}, Want: Blocked, Expected: "unreachable", HostAbsent: !in.Facts.Exists[NixDaemonSocket]}
	if in.NixDaemon {
		daemon.Want, daemon.Expected = Allowed, "reachable (nix = \"daemon\")"
	}
	add(daemon)
	storeWrite := Probe{ID: "nix:store-write", Group: "nix", Name: "write the host's /nix/store", Kind: KindWrite,
		Targets: []string{filepath.Join(NixStore, ".box-drill-"+in.Nonce)}, Want: Blocked, Expected: "refused",
		HostAbsent: !in.Facts.Exists[NixStore]}
	if in.NixStore {
		storeWrite.Scratch, storeWrite.Expected = true, "not on host (the project's own store)"
	}
	add(storeWrite)

	// Processes and privileges.
	add(Probe{ID: "pids", Group: "processes", Name: "host PIDs", Kind: KindPIDs, Want: Blocked,
		Expected: "only the sandbox's own"})
	add(Probe{ID: "priv:no-new-privs", Group: "privileges", Name: "no_new_privs", Kind: KindNoNewPrivs,
		Want: Blocked, Expected: "set (NoNewPrivs 1)"})
	add(Probe{ID: "priv:caps", Group: "privileges", Name: "capabilities", Kind: KindCaps, Want: Blocked,
		Expected: "none (CapEff 0)"})
	setuid := Probe{ID: "priv:setuid", Group: "privileges", Name: "setuid-root exec", Kind: KindSetuid,
		Want: Blocked, Expected: "euid unchanged"}
	if in.Facts.Setuid == "" {
		setuid.Skip = "no setuid-root binary on host"
	} else {
		setuid.Targets = []string{in.Facts.Setuid}
	}
	add(setuid)
	add(Probe{ID: "priv:userns", Group: "privileges", Name: "new user namespace", Kind: KindUserns, Want: Blocked,
		Expected: "refused"})

	for _, pr := range kernelProbes(in) {
		add(pr)
	}

	// Writes: the working directory is writable; nothing else reaches the host.
	name := ".box-drill-" + in.Nonce
	add(Probe{ID: "write:workdir", Group: "writes", Name: "write working dir", Kind: KindWrite,
		Targets: []string{filepath.Join(in.Workdir, name)}, Want: Open, Expected: "written"})
	for _, d := range []string{"/", "/etc", "/usr", "/usr/local/bin", "/var", "/run", "/opt"} {
		add(Probe{ID: "write:" + d, Group: "writes", Name: "write " + d, Kind: KindWrite,
			Targets: []string{filepath.Join(d, name)}, Want: Blocked, Expected: "refused"})
	}
	for _, rel := range []string{"", ".ssh", ".config"} {
		d := filepath.Join(in.Home, rel)
		add(Probe{ID: "write:~/" + rel, Group: "writes", Name: "write ~/" + rel + " (real home)", Kind: KindWrite,
			Targets: []string{filepath.Join(d, name)}, Want: Blocked, Scratch: true, Expected: "not on host"})
	}
	// box's own directories: a sandbox that wrote them would rewrite what box's next
	// run reads (its profiles, its audit's state, a dev shell's cached shellHook). The
	// sandbox's home is its own tmpfs, so only a write reaching the host counts.
	for _, d := range in.BoxDirs {
		id := d
		if rel, err := filepath.Rel(in.Home, d); err == nil && !strings.HasPrefix(rel, "..") {
			id = "~/" + rel
		}
		add(Probe{ID: "write:box:" + id, Group: "writes", Name: "write " + id + " (box's own state)", Kind: KindWrite,
			Targets: []string{filepath.Join(d, name)}, Want: Blocked, Scratch: true, Expected: "not on host"})
	}
	if parent := filepath.Dir(in.Workdir); parent != in.Workdir && parent != in.Home {
		add(Probe{ID: "write:parent", Group: "writes", Name: "write parent of working dir", Kind: KindWrite,
			Targets: []string{filepath.Join(parent, name)}, Want: Blocked, Scratch: true, Expected: "not on host"})
	}

	// Nothing the sandbox writes runs outside it.
	for _, pr := range protectProbes(in) {
		add(pr)
	}

	// What the sandbox leaves for the host to execute: a nested repository, made inside,
	// whose core.fsmonitor runs on the host's next git status (the post-run audit moves
	// it aside).
	he := Probe{ID: "host-exec:nested-fsmonitor", Group: "host-exec", Name: "nested repo with core.fsmonitor, host git status",
		Kind: KindHostExec, Want: Blocked, Expected: "nothing runs on the host",
		Targets: []string{filepath.Join(in.Workdir, name+"-repo"), filepath.Join(in.Workdir, name+"-ran")}}
	if in.Facts.Git == "" {
		he.Skip = "git not installed on the host"
	}
	add(he)
	add(hiddenRepoProbe(in, name))     // drill/unknowns.go
	add(worktreeGitdirProbe(in, name)) // drill/unknowns.go
	add(worktreeLinkProbe(in, name))   // drill/unknowns.go
	add(rwMountProbe(in, name))        // drill/unknowns.go
	add(mainRebaseProbe(in, name))     // drill/unknowns.go
	add(devShellImportProbe(in))       // drill/devshell_import.go
	add(gitCredProbe(in))              // drill/gitcreds.go
	add(gitCredViaMountProbe(in))      // drill/gitcreds.go
	add(systemGitCredProbe(in))        // drill/gitcreds.go

	// Network, by the contract of in.Expect.
	inetWant, localWant, why := contract(in.Expect)
	word := func(w Want, blocked string) string {
		switch w {
		case Blocked:
			return blocked
		case Allowed:
			return why
		}
		return "reachable"
	}
	tag := ""
	if in.Expect != in.Tier {
		tag = " [tier " + string(in.Tier) + " judged as " + string(in.Expect) + "]"
	}
	if in.Expect.Proxied() {
		for _, pr := range allowlistProbes(in, tag) {
			add(pr)
		}
	} else {
		add(Probe{ID: "net:internet", Group: "network", Name: "internet (HTTP GET)" + tag, Kind: KindHTTP,
			Targets: []string{in.InternetURL}, Want: inetWant, Expected: word(inetWant, "unreachable")})
	}

	hostPorts := in.Facts.Listening
	if in.HostPort > 0 {
		hostPorts = []int{in.HostPort}
	}
	probePorts := func(extra []int) []int {
		ps := append(append([]int{}, extra...), 22, 53, 80, 443)
		if len(extra) > 3 {
			ps = append(extra[:3:3], 22, 53, 80, 443)
		}
		slices.Sort(ps)
		return slices.Compact(ps)
	}
	targets := func(addrs []netip.Addr, ports []int) []string {
		var out []string
		for _, a := range addrs {
			for _, port := range ports {
				out = append(out, netip.AddrPortFrom(a, uint16(port)).String())
			}
		}
		return out
	}
	netProbe := func(id, name string, addrs []netip.Addr, ports []int, extra []string, none string) {
		pr := Probe{ID: "net:" + id, Group: "network", Name: name + tag, Kind: KindTCP,
			Targets: append(targets(addrs, ports), extra...), Want: localWant, Expected: word(localWant, "unreachable")}
		if len(pr.Targets) == 0 {
			pr.Skip = none
		}
		add(pr)
	}
	var gws, neigh, hostAddrs []netip.Addr
	for _, a := range in.Facts.Gateways {
		if probeable(a) {
			gws = append(gws, a)
		}
	}
	for _, a := range append(slices.Clone(in.Facts.Neighbors), in.Facts.Routed...) {
		if probeable(a) && !slices.Contains(gws, a) && !slices.Contains(neigh, a) {
			neigh = append(neigh, a)
		}
	}
	for _, a := range in.Facts.Addrs {
		if probeable(a) {
			hostAddrs = append(hostAddrs, a)
		}
	}
	netProbe("lan-gateway", "LAN: host's default gateway", gws, probePorts(nil), nil, "no default gateway on host")
	netProbe("lan-hosts", "LAN: neighbours and named hosts", neigh, probePorts(nil), in.LANTargets, "no LAN neighbour known (name one: --lan ADDR:PORT)")
	netProbe("host", "host's own addresses", hostAddrs, probePorts(hostPorts), nil, "no non-loopback address on host")
	add(Probe{ID: "net:sandbox-gateway", Group: "network", Name: "sandbox's gateway (host loopback)" + tag, Kind: KindGateway,
		Ports: probePorts(hostPorts), Want: localWant, Expected: word(localWant, "unreachable")})
	if in.Tier == TierInternet && !in.Expect.Proxied() {
		add(loopbackRenameProbe(append(targets(neigh, []int{80}), in.LANTargets...), localWant, word(localWant, "refused")))
	}
	netProbe("special-ranges", "special-purpose ranges a host may route: 198.18.0.0/15, 192.0.0.0/24", SpecialTargets, []int{80}, nil, "")
	// 169.254.1.1:53 over TCP: pasta's DNS address, which it maps to the host's resolver
	// for UDP only; TCP there goes to the link-local address itself.
	netProbe("metadata", "link-local: metadata 169.254.169.254, 169.254.1.1 TCP 53", []netip.Addr{netip.MustParseAddr("169.254.169.254")}, []int{80},
		[]string{"169.254.1.1:53"}, "")
	abWant := localWant
	if in.AbstractScoped {
		abWant = Blocked
	}
	ab := Probe{ID: "net:abstract", Group: "network", Name: "host abstract unix sockets" + tag, Kind: KindAbstract,
		Targets: in.Facts.Abstract, Want: abWant, Expected: word(abWant, "unreachable")}
	if len(ab.Targets) == 0 {
		ab.Skip = "no listening abstract socket on host"
	}
	add(ab)
	add(unixPathProbe(in))

	// Limits: what a tenant does to take the host's pids, memory and RAM-backed disk.
	for _, pr := range limitProbes(in.Limits, in.Nonce) {
		add(pr)
	}
	return p, nil
}

// allowlistProbes are tier allowlist's own rows: the allowed name works; a name not
// allowed, the same host by address, allowed names resolving to private addresses, UDP
// and ICMP out do not.
func allowlistProbes(in Input, tag string) []Probe {
	pr := func(id, name string, kind Kind, targets []string, want Want, expected, skip string) Probe {
		if skip == "" && len(targets) == 0 {
			skip = "no target"
		}
		return Probe{ID: "net:" + id, Group: "network", Name: name + tag, Kind: kind, Targets: targets,
			Want: want, Expected: expected, Skip: skip}
	}
	var byAddr, udp, icmp []string
	noAddr := ""
	if a := in.Facts.InternetAddr; a.IsValid() {
		byAddr = []string{"http://" + netip.AddrPortFrom(a, 80).String() + "/"}
		udp = []string{netip.AddrPortFrom(a, 123).String()}
		icmp = []string{a.String()}
	} else {
		noAddr = "the --internet-url host does not resolve on the host"
	}
	udpSkip := noAddr
	if in.UDPTarget != "" {
		udp, udpSkip = []string{in.UDPTarget}, ""
	}
	allowedSkip := ""
	if in.AllowedURL == "" {
		allowedSkip = "no exact name allowed (name one with --allowed-url)"
	}
	rebindSkip := ""
	if len(in.RebindURLs) == 0 {
		rebindSkip = "name an allowed host that resolves to a private address with --rebind-url"
	}
	var allowed []string
	if in.AllowedURL != "" {
		allowed = []string{in.AllowedURL}
	}
	return []Probe{
		pr("internet", "allowed name (HTTP GET)", KindHTTP, allowed, Open, "reachable", allowedSkip),
		pr("denied-name", "name not allowed (HTTP GET)", KindHTTP, []string{in.InternetURL}, Blocked, "refused", ""),
		pr("by-address", "same host by address, no name", KindHTTP, byAddr, Blocked, "refused", noAddr),
		pr("rebind", "allowed name resolving off the internet", KindHTTP, in.RebindURLs, Blocked, "refused", rebindSkip),
		pr("udp", "UDP out (not DNS)", KindUDP, udp, Blocked, "dropped", udpSkip),
		pr("icmp", "ICMP echo out", KindICMP, icmp, Blocked, "dropped", noAddr),
	}
}

// SpecialTargets are what net:special-ranges dials (port 80): one address in each
// special-purpose range a host may route to a service of its own, as a fake-IP proxy
// does with 198.18.0.0/15 and a DS-Lite or NAT64 box with 192.0.0.0/24 (policy.Unreachable).
// The lab's LAN host answers on them (lab.Special).
var SpecialTargets = []netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("192.0.0.8")}

// probeable: an address a sandbox could use to reach something outside itself. Loopback
// is the sandbox's own (in tiers none and internet), link-local v6 needs a zone.
func probeable(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsMulticast() && !(a.Is6() && a.IsLinkLocalUnicast())
}
