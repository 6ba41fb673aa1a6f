package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/phase"
	"github.com/heavy-duty/box/internal/termtext"
)

// Prepared is a plan made ready to launch: bwrap's argv and the network tier's helper.
type Prepared struct {
	Args []string
	Net  inet.Options
	// NoTTY: terminals on stdio reach the command as pipes, with no terminal of its own.
	NoTTY bool
	// Quiet (-q): box's own notes (the allowlist's opening line) are not printed;
	// warnings and findings still are.
	Quiet bool
	// Ended is Session.Ended (Launch.Ended).
	Ended func()
}

// Prepare makes a resolved plan ready to launch: the network tier's helper (found on
// PATH, with the host's addresses as of now) and bwrap's argv. It changes no decision of
// the plan, and starts nothing. helper is $BOX_INTERNET_HELPER ("" lets box choose).
func Prepare(p *Plan, helper string) (Prepared, error) {
	var pr Prepared
	var err error
	if p.Spec.Network.NeedsHelper() {
		// The helper decides the resolver address the sandbox's resolv.conf names.
		h := inet.Helper(helper)
		if h != inet.Auto && h != inet.Pasta && h != inet.Slirp4netns {
			return pr, errs.Usage("unset it to let box choose (pasta, else slirp4netns)", "BOX_INTERNET_HELPER=%q: want pasta or slirp4netns", helper)
		}
		if pr.Net, err = (inet.Options{Helper: h}).Resolve(); err != nil {
			return pr, needs(NeedHelper, err)
		}
		if pr.Net.HostAddrs, err = inet.HostAddrs(); err != nil {
			return pr, fmt.Errorf("internet tier: listing the host's addresses: %w", err)
		}
		if pr.Net.HostNets, err = hostNets(); err != nil {
			return pr, fmt.Errorf("internet tier: %w", err)
		}
		pr.Net.UnsafeResolverTCP = protectionOff(ProtResolverTCP)
		pr.Net.UnsafeLoopbackName = protectionOff(ProtLoopbackIndex)
		if protectionOff(ProtSpecialRanges) {
			pr.Net.Blocked = slices.DeleteFunc(slices.Clone(inet.Blocked), func(p netip.Prefix) bool {
				return p == netip.MustParsePrefix("192.0.0.0/24") || p == netip.MustParsePrefix("198.18.0.0/15")
			})
		}
	}
	if p.Spec.Network.Proxied() {
		// No uplink: the proxy dials from box's own netns and never to the host's
		// addresses; DNS is box's, on the sandbox's loopback.
		if pr.Net.HostAddrs, err = inet.HostAddrs(); err != nil {
			return pr, fmt.Errorf("allowlist tier: listing the host's addresses: %w", err)
		}
		if pr.Net.HostNets, err = hostNets(); err != nil {
			return pr, fmt.Errorf("allowlist tier: %w", err)
		}
	}
	pr.Args, err = Args(p.Spec, p.Host)
	return pr, err
}

// ProtHostLAN is the tiers' rejection of the host's own subnets (inet.HostNets): a test
// build can switch it off (BOX_UNSAFE_OFF=host-lan), so the drill shows a LAN numbered in
// public space reached.
const ProtHostLAN = "host-lan"

// ProtHostRoutes is the tiers' rejection of the prefixes the host routes to networks
// of its own (inet.HostRoutes: a VPN's, a static route's): a test build can switch it off
// (BOX_UNSAFE_OFF=host-routes), so the drill shows a VPN in public address space reached.
const ProtHostRoutes = "host-routes"

// ProtResolverTCP is the internet tier's refusal of TCP to pasta's resolver address
// (inet.Options.UnsafeResolverTCP): a test build can switch it off
// (BOX_UNSAFE_OFF=resolver-tcp), so the drill shows 169.254.1.1:53 reached over TCP.
const ProtResolverTCP = "resolver-tcp"

// ProtLoopbackIndex is the internet tier's acceptance of loopback by its index, not its
// name (inet.LoopbackIndex): a test build can switch it off (BOX_UNSAFE_OFF=loopback-index),
// back to `oifname "lo"`, which the uplink renamed "lo" passes.
const ProtLoopbackIndex = "loopback-index"

// ProtSpecialRanges is the internet tier's rejection of the special-purpose ranges the
// session 12 review found open, 192.0.0.0/24 and 198.18.0.0/15 (policy.Unreachable): a
// test build can switch it off (BOX_UNSAFE_OFF=special-ranges), so the drill's
// net:special-ranges row shows them reached where the host routes them.
const ProtSpecialRanges = "special-ranges"

// ProtResolverSearch is the allowlist proxy's rooted lookup (the host's search list
// never applies): a test build can switch it off (BOX_UNSAFE_OFF=resolver-search), so the
// drill shows a name the search list completes dialled.
const ProtResolverSearch = "resolver-search"

// hostNets are the subnets the internet and allowlist tiers reject besides the blocked
// ranges: the host's own, its LAN however numbered, and the prefixes it routes to
// networks of its own (a VPN's).
func hostNets() ([]netip.Prefix, error) {
	var nets []netip.Prefix
	if !protectionOff(ProtHostLAN) {
		var err error
		if nets, err = inet.HostNets(); err != nil {
			return nil, err
		}
	}
	if !protectionOff(ProtHostRoutes) {
		routes, err := inet.HostRoutes()
		if err != nil {
			return nil, err
		}
		nets = append(nets, routes...)
	}
	return nets, nil
}

// RefuseRoot: user namespaces do not take root's file ownership away, so as root the
// command could read root-only files (/etc/shadow, host keys) in the read-only binds.
// Only --allow-root accepts that.
func (p *Plan) RefuseRoot() error {
	if os.Geteuid() == 0 && !p.AllowRoot {
		return ErrRoot
	}
	return nil
}

// LookBwrap finds the bwrap binary.
func LookBwrap() (string, error) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return "", needs(NeedBwrap, errors.New("bwrap (bubblewrap) is not installed"))
	}
	return bin, nil
}

// Start prepares the instance directory, runs bwrap (attaching the internet tier before
// the command is released) and returns the command's exit code.
func (p *Plan) Start(pr Prepared, bin string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if err := p.RefuseRoot(); err != nil {
		return 1, err
	}
	if err := p.chooseIsolation(bin, stderr); err != nil { // isolation.go
		return ExitStart, p.usernsOfBox(err)
	}
	phase.Mark("start:userns")
	leave, err := p.settleTrust(stderr)
	if err != nil {
		return 1, err
	}
	defer leave()
	phase.Mark("start:trust")
	if err := p.checkEtcFiles(); err != nil {
		return 1, err
	}
	ports, err := p.openPorts(stderr) // publish.go: a taken host port fails here, before anything starts
	if err != nil {
		return 1, err
	}
	defer ports.close()
	if err := PrepareInstance(p.Spec.InstanceDir, p.Policy); err != nil {
		return 1, fmt.Errorf("prepare instance directory %s: %w", p.Spec.InstanceDir, err)
	}
	if err := p.WriteGitConfig(); err != nil {
		return 1, fmt.Errorf("prepare instance directory %s: %w", p.Spec.InstanceDir, err)
	}
	if err := p.Spec.writeRedacted(); err != nil { // gitcreds.go
		return 1, fmt.Errorf("prepare instance directory %s: %w", p.Spec.InstanceDir, err)
	}
	if p.Isolation.Landlock() {
		return p.startLandlock(stdin, stdout, stderr) // isolation.go
	}
	removed, err := PrepareHome(p.Spec)
	for _, r := range removed {
		fmt.Fprintf(stderr, "box: warning: removed the symbolic link %s from box %s's home: box mounts there\n", termtext.Escape(r, false), p.Policy.Box)
	}
	if err != nil {
		return 1, errs.WithHint(fmt.Errorf("box %s: %w", p.Policy.Box, err), "the box's home is "+p.Spec.HomeDir)
	}
	// Placeholders make the protected paths that are absent exist, so they are bound
	// read-only too; temporary ones go when the last run on this tree ends.
	release, skipped, err := protect.Place(p.Protect, p.ProtectLock)
	if err != nil {
		return 1, err
	}
	defer release()
	pr.Args = dropROBinds(pr.Args, skipped)
	if err := protect.Recheck(p.Protect, skipped); err != nil {
		return 1, err
	}
	phase.Mark("start:instance+protect")
	launch := Launch{
		Bwrap: bin, Args: pr.Args, Env: envaudit.Environ(p.Vars),
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		ScopeAbstract: p.Spec.ScopeAbstract, UnixSockets: p.Spec.UnixSockets, NoTTY: pr.NoTTY, Ended: pr.Ended,
	}
	if p.Spec.Seccomp != nil {
		prog, err := p.Spec.Seccomp.Bytes()
		if err != nil {
			return 1, err
		}
		launch.Seccomp = prog
	}
	phase.Mark("start:seccomp")
	// box's own binary: the Nix store's helper, and the session helper on a terminal.
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return 1, fmt.Errorf("locating box's own binary: %w", err)
	}
	launch.Self = self
	if p.Spec.NixStore != "" {
		if err := PrepareNixStore(p.Spec.NixStore); err != nil {
			return 1, err
		}
		if err := RegisterHostPaths(bin, p.Host, p.Spec.NixStore); err != nil { // nixstore.go
			return 1, err
		}
		launch.NixStore = p.Spec.NixStore
	}
	if p.Spec.Network.NeedsHelper() {
		if err := os.WriteFile(p.Spec.ResolvConf, []byte(inet.ResolvConf(pr.Net.Helper)), 0o644); err != nil {
			return 1, fmt.Errorf("internet tier: %w", err)
		}
		// The command waits behind bwrap's block fd until networking and the egress
		// filter are in place; if they cannot be, it never runs.
		launch.BeforeRelease = func(pid int) (func(), error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := inet.Attach(ctx, pid, pr.Net)
			if err != nil {
				return nil, needs(NeedInternet, fmt.Errorf("internet tier: %w", err))
			}
			return func() {
				if ended, why := s.EndedEarly(); ended {
					fmt.Fprintf(stderr, "box: warning: internet tier: %s ended while the sandbox ran (%s): the sandbox had no network from then on\n", s.Helper, why)
				}
				s.Close()
			}, nil
		}
	}
	if p.Spec.Network.Proxied() {
		if err := p.startAllowlist(pr, &launch, stderr); err != nil {
			return 1, err
		}
	}
	stopSSH, err := p.startSSH(pr.Quiet, stderr)
	if err != nil {
		return 1, err
	}
	defer stopSSH()
	limits, err := p.Enforce.Start()
	if err != nil {
		return 1, needs(NeedLimits, err)
	}
	launch.BeforeRelease = ports.hook(launch.BeforeRelease) // forward.go
	launch.BeforeRelease = limitHook(limits, launch.BeforeRelease)
	phase.Mark("start:limits")
	code, err := Run(launch)
	phase.Mark("start:bwrap")
	reportLimits(stderr, code, p.Spec.Limits, limits.Finish())
	if err == nil {
		if uerr := usernsAfter(bin, p.usernsKey, code); uerr != nil { // the command never ran: why (userns_read.go)
			return ExitStart, p.usernsOfBox(uerr)
		}
	}
	if err != nil {
		var ce *CheckError
		if errs.HintOf(err) != "" || errors.As(err, &ce) {
			return code, err
		}
		return code, needs(NeedSandbox, err)
	}
	return code, nil
}

// dropROBinds removes the read-only self-binds of paths (placeholders box could not make:
// nothing exists there to bind, and the sandbox cannot create them either).
func dropROBinds(args, paths []string) []string {
	if len(paths) == 0 {
		return args
	}
	drop := map[string]bool{}
	for _, p := range paths {
		drop[p] = true
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if args[i] == "--ro-bind" && i+2 < len(args) && args[i+1] == args[i+2] && drop[args[i+1]] {
			i += 2
			continue
		}
		out = append(out, args[i])
	}
	return out
}
