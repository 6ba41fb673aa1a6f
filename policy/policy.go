// Package policy is the single source of what the backends, the host stack and the drill
// share: the network tiers (tier.go), the secret paths of an operator's home, the address
// ranges no box may reach, the protected set (protect.go) and the syscall filter's groups
// (syscalls.go). Each list lives here once; everything else reads it.
package policy

import (
	"net/netip"
	"path/filepath"
	"strings"
)

// Secret is one well-known secret location of an operator's home.
type Secret struct {
	ID    string   // the drill's probe id
	What  string   // what it holds, for warnings and refusals
	Paths []string // home-relative, or absolute for system-wide state
}

// Secrets are the secret locations box refuses as a working directory, warns about as a
// mount, and the drill probes inside every sandbox.
var Secrets = []Secret{
	{"ssh", "SSH keys (~/.ssh)", []string{".ssh"}},
	{"aws", "AWS credentials (~/.aws)", []string{".aws"}},
	{"gnupg", "GPG keys (~/.gnupg)", []string{".gnupg"}},
	{"gcloud", "Google Cloud credentials (~/.config/gcloud)", []string{".config/gcloud"}},
	{"tailscale", "Tailscale state", []string{".local/share/tailscale", ".config/tailscale", "/var/lib/tailscale"}},
	{"age", "age keys", []string{".config/age", ".age", ".config/sops/age"}},
	{"netrc", "netrc passwords (~/.netrc)", []string{".netrc"}},
	{"git-credentials", "git credentials", []string{".git-credentials", ".config/git/credentials"}},
	{"docker", "Docker credentials (~/.docker)", []string{".docker"}},
	{"kube", "Kubernetes credentials (~/.kube)", []string{".kube"}},
	{"gh", "GitHub CLI tokens (~/.config/gh)", []string{".config/gh"}},
	{"cloud-cli", "other cloud CLIs' tokens", []string{".azure", ".config/doctl", ".oci", ".config/hcloud",
		".terraform.d/credentials.tfrc.json", ".config/linode-cli", ".fly", ".config/heroku", ".netlify", ".config/op"}},
	{"package-registries", "package registry tokens", []string{".npmrc", ".pypirc", ".cargo/credentials.toml", ".gem/credentials", ".m2/settings.xml"}},
	{"password-stores", "password stores and keyrings", []string{".password-store", ".local/share/keyrings", ".pgpass", ".vault-token"}},
	{"claude-credentials", "Claude login (~/.claude/.credentials.json)", []string{".claude/.credentials.json"}},
}

// Abs makes a secret path absolute under home.
func Abs(home, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(home, p)
}

// SecretAt names what path p exposes when it is, holds or lies in a secret location of
// home (or is home itself); "" otherwise. A socket or /run/user is named too.
func SecretAt(p, home string) string {
	if p == home {
		return "your home directory (and its secrets)"
	}
	// In a fixed order, so the same path always gets the same answer.
	for _, s := range Secrets {
		for _, rel := range s.Paths {
			sp := Abs(home, rel)
			if p == sp || strings.HasPrefix(p, sp+"/") || strings.HasPrefix(sp, p+"/") {
				return s.What
			}
		}
	}
	if strings.HasSuffix(p, ".sock") || p == "/run/user" || strings.HasPrefix(p, "/run/user/") {
		return "a socket to a host service"
	}
	return ""
}

// Range is one entry of Unreachable: a destination range no box reaches, and why.
type Range struct {
	Prefix netip.Prefix
	What   string
	// ACL: the vm backend's ACL drops it as well (PrivateRanges): every unicast range a
	// host may route. The others the host's kernel never forwards from the box bridge
	// (0/8 and 127/8 are martians, multicast needs a multicast router) or box/input
	// drops on the way to the host itself (240/4 holds the limited broadcast the boxes'
	// DHCP sends there).
	ACL bool
}

// Unreachable is the one catalogue of destination ranges no box reaches: the IANA IPv4
// special-purpose registry's ranges that are not globally reachable, multicast, and
// the reserved block (limited broadcast included). Sorted by address. Blocked and
// PrivateRanges are read from it.
//
// Left open on purpose: the documentation ranges 192.0.2.0/24, 198.51.100.0/24 and
// 203.0.113.0/24 (the internet routes none of them; a host that numbers its LAN there
// has that subnet rejected as its own; the drill's lab is numbered in them). IPv6 has no
// entry: every tier rejects all of it (IsBlocked), so ULA, link-local, multicast, NAT64
// (64:ff9b::/96 and 64:ff9b:1::/48, which a host's NAT64 would turn into private IPv4),
// 6to4 (2002::/16), v4-mapped and discard-only (100::/64) are out with the rest.
var Unreachable = []Range{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network", false},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)", true},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)", true},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", false},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)", true},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)", true},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (DS-Lite, NAT64 discovery)", true},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)", true},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (fake-IP VPN and proxy tools route it on the host)", true},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast", false},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved, limited broadcast", false},
}

// PrivateRanges are the destinations the vm backend's ACL drops: the unicast entries of
// Unreachable (Range.ACL).
var PrivateRanges = func() []netip.Prefix {
	var out []netip.Prefix
	for _, r := range Unreachable {
		if r.ACL {
			out = append(out, r.Prefix)
		}
	}
	return out
}()

// OwnNetworkRoute reports whether a host route to p leads to a network of the host's own
// (its LAN, a VPN, a static route to a site), which the bwrap internet and allowlist tiers
// never reach, rather than to the internet: the default route and the /1 halves a
// full-tunnel VPN overrides it with (0.0.0.0/1, 128.0.0.0/1) are the internet; every
// longer prefix is a network the host was told of by name, whatever its numbering (a
// split-tunnel VPN to a company network in public address space is in no blocked range;
// review finding, session 13).
func OwnNetworkRoute(p netip.Prefix) bool { return p.IsValid() && p.Bits() > 1 }

// Blocked are the destination ranges the bwrap internet tier never reaches, and the
// allowlist tier's proxy never dials: every entry of Unreachable, which a user-mode
// network helper would otherwise dial from the host. Sorted by address.
var Blocked = func() []netip.Prefix {
	out := make([]netip.Prefix, len(Unreachable))
	for i, r := range Unreachable {
		out[i] = r.Prefix
	}
	return out
}()

// IsBlocked reports whether a lies in Blocked (IPv4-mapped addresses unmapped). Any
// other IPv6 address counts as blocked: the tiers are IPv4 only.
func IsBlocked(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return true
	}
	for _, p := range Blocked {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// SystemSecret is a well-known file under the system paths (read-only, readable inside
// every sandbox) that holds credentials when an administrator puts them there.
type SystemSecret struct {
	Path string // absolute; a glob pattern for a directory of them
	What string
}

// SystemSecrets are the files box checks before launch and names, file and key, when
// one holds what looks like a credential: the sandbox can read them (box hides only the
// git configs', backend/bwrap/gitcreds.go).
var SystemSecrets = []SystemSecret{
	{"/etc/environment", "the login environment (pam_env)"},
	{"/etc/npmrc", "npm's global config"},
	{"/usr/etc/npmrc", "npm's global config"},
	{"/usr/local/etc/npmrc", "npm's global config"},
	{"/etc/pip.conf", "pip's global config"},
	{"/etc/xdg/pip/pip.conf", "pip's global config"},
	{"/etc/boto.cfg", "boto's and gsutil's config"},
	{"/etc/nix/nix.conf", "Nix's config (access-tokens)"},
	{"/etc/nix/netrc", "Nix's netrc for private caches"},
	{"/etc/apt/auth.conf", "apt's repository logins"},
	{"/etc/apt/auth.conf.d/*", "apt's repository logins"},
	{"/etc/rancher/k3s/k3s.yaml", "k3s's admin kubeconfig"},
	{"/etc/kubernetes/admin.conf", "Kubernetes' admin kubeconfig"},
	{"/etc/gemrc", "RubyGems' global config"},
}
