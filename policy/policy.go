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

// PrivateRanges are the destinations no box may reach on any tier that has a network of
// its own: RFC 1918, CGNAT, link-local (cloud metadata at 169.254.169.254 included). The
// vm backend's ACL drops them.
var PrivateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"),
}

// Blocked are the destination ranges the bwrap internet tier never reaches: the
// private ranges, and also loopback off lo, "this network", multicast and reserved
// (broadcast included), which a user-mode network helper would otherwise dial from the
// host. Sorted by address.
var Blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

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
