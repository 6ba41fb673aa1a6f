package host

// The restricted multi-user tier: box grant gives an unprivileged local user their own
// Incus project, reached through incus-user's socket. incus-user authenticates a
// connection by its peer credentials and forwards it to incusd with that user's own
// certificate (INCUS_DIR/users/UID/client.crt), which the trust store confines to the
// project user-UID. incus-user sets a first-time user up itself, loosely (its own NAT
// bridge, host paths under $HOME, nesting, GPUs); box grant has it do so on a first
// contact box makes as the user, then converges the project to this policy at once.
//
// This file is the policy as plain data: the project's config (one list, read by grant
// and by doctor), the profiles the project holds, and the comparison doctor reports.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/heavy-duty/box/backend/incus"
)

// GrantKey marks a project box grant made (its value: the user's name). A restricted
// certificate cannot change its project's config, so the user cannot forge or drop it.
const GrantKey = "user.box.grant"

// UserSocket is incus-user's socket in the incus directory.
const UserSocket = "unix.socket.user"

// GrantProject is the project of a user: incus-user's name for it, so the user's own
// incus CLI lands in the same project as their box.
func GrantProject(uid int) string { return "user-" + strconv.Itoa(uid) }

// GrantCertName is the trust store name of the user's certificate (incus-user's).
func GrantCertName(uid int) string { return "incus-user-" + strconv.Itoa(uid) }

// UserBridge is the private NAT bridge incus-user makes for a user it sets up itself
// (incusbr-UID, or user-UID when that is too long for an interface name). box grant
// removes it: it has none of box's isolation stack.
func UserBridge(uid int) string {
	if n := "incusbr-" + strconv.Itoa(uid); len(n) <= 15 {
		return n
	}
	return "user-" + strconv.Itoa(uid)
}

// ProjectOfUID parses a grant's project name back to the uid (ok false for any other
// project).
func ProjectOfUID(project string) (int, bool) {
	s, ok := strings.CutPrefix(project, "user-")
	if !ok {
		return 0, false
	}
	uid, err := strconv.Atoi(s)
	return uid, err == nil && uid > 0 && strconv.Itoa(uid) == s
}

// BridgeNFPath says whether IPv4 switched between two ports of a bridge also passes the
// inet hooks (br_netfilter's bridge-nf-call-iptables), where the host firewall drops
// new connections towards the box bridge whatever the ports are named.
const BridgeNFPath = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// PortNameGap reports whether a granted user can take their box out of the box-to-box
// drop by naming its bridge port (NIC host_name, which incusd lets a restricted project
// set) and turning its port isolation off: only when the firewall matches ports by name
// (no bridge meta) and switched IPv4 skips the inet hooks. Measured both ways:
// cmd/box/portname_live_test.go.
func PortNameGap(bridgeMeta, bridgeNF bool) bool { return !bridgeMeta && !bridgeNF }

// GrantLimitsKey records the limits box grant set (NAME=VALUE,...), so doctor checks
// them and a later box grant without --limit keeps them.
const GrantLimitsKey = "user.box.grant.limits"

// GrantLimits are the project limits box grant --limit takes (limits.NAME).
var GrantLimits = []string{"instances", "containers", "virtual-machines", "cpu", "memory", "disk", "processes"}

// Compiled on first use: package init runs in every box process, whatever the verb.
var (
	countRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+$`) })
	sizeRe  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(B|kB|MB|GB|TB|PB|EB|KiB|MiB|GiB|TiB|PiB|EiB)?$`)
	})
)

// ParseGrantLimit parses one NAME=VALUE of box grant --limit.
func ParseGrantLimit(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !slices.Contains(GrantLimits, name) {
		return "", "", fmt.Errorf("--limit %q: want NAME=VALUE, NAME one of %s", s, strings.Join(GrantLimits, ", "))
	}
	switch {
	case name == "memory" && strings.HasSuffix(value, "%") && countRe().MatchString(strings.TrimSuffix(value, "%")):
	case (name == "memory" || name == "disk") && sizeRe().MatchString(value):
	case name != "memory" && name != "disk" && countRe().MatchString(value):
	default:
		return "", "", fmt.Errorf("--limit %s=%q: not a valid value (a count, or for memory and disk a size such as 8GiB)", name, value)
	}
	return name, value, nil
}

// RecordedLimits reads the limits box grant recorded in a project's config.
func RecordedLimits(cfg map[string]string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(cfg[GrantLimitsKey], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && slices.Contains(GrantLimits, k) {
			out[k] = v
		}
	}
	return out
}

// Grant is what a user's project is planned from: facts read elsewhere.
type Grant struct {
	User   string // the local user's name
	UID    int
	Bridge string // the box bridge (the placement profile's NIC network)
	// Limits are the project limits box sets (NAME -> VALUE, of GrantLimits).
	Limits map[string]string
}

// ProjectConfig is the whole config of a granted project. Every key box does not set
// is unset, and with restricted=true an unset restriction blocks. Written out in full
// so doctor compares exactly what grant set.
func (g Grant) ProjectConfig() map[string]string {
	cfg := map[string]string{
		GrantKey: g.User,
		// Images are the project's own, like its profiles, volumes, buckets and network
		// zones: a restricted certificate may write image aliases, and with
		// features.images=false they land in the default project's store, where the
		// operator's and every other user's box new would find them (measured: the
		// drill's grant-images probe). Networks are the default project's; the user
		// may attach to the box bridge only.
		"features.images":          "true",
		"features.profiles":        "true",
		"features.networks":        "false",
		"features.networks.zones":  "true",
		"features.storage.volumes": "true",
		"features.storage.buckets": "true",

		"restricted":                      "true",
		"restricted.networks.access":      g.Bridge,
		"restricted.networks.uplinks":     "",
		"restricted.networks.subnets":     "",
		"restricted.networks.zones":       "",
		"restricted.devices.nic":          "managed",
		"restricted.devices.disk":         "managed", // pool volumes only, never a host path
		"restricted.devices.disk.paths":   "",
		"restricted.devices.gpu":          "block",
		"restricted.devices.usb":          "block",
		"restricted.devices.pci":          "block",
		"restricted.devices.infiniband":   "block",
		"restricted.devices.unix-char":    "block",
		"restricted.devices.unix-block":   "block",
		"restricted.devices.unix-hotplug": "block",
		"restricted.devices.proxy":        "block", // box expose is the operator's
		"restricted.containers.nesting":   "block",
		// isolated: every container of the user's asks for a host uid range of its own
		// (security.idmap.isolated=true, as box new sets it). An unprivileged one without
		// it maps the shared range, which holds every isolated box's range: its root
		// could become the host user of another's box (drill: grant:USER:shared-ids).
		"restricted.containers.privilege":      "isolated",
		"restricted.containers.lowlevel":       "block",
		"restricted.containers.interception":   "block",
		"restricted.virtual-machines.lowlevel": "block",
		"restricted.idmap.uid":                 "",
		"restricted.idmap.gid":                 "",
		"restricted.cluster.target":            "block",
		"restricted.snapshots":                 "allow", // box's clone workflow
		"restricted.backups":                   "allow", // box export
	}
	if len(g.Limits) > 0 {
		var rec []string
		for _, k := range slices.Sorted(maps.Keys(g.Limits)) {
			cfg["limits."+k] = g.Limits[k]
			rec = append(rec, k+"="+g.Limits[k])
		}
		cfg[GrantLimitsKey] = strings.Join(rec, ",")
	}
	return cfg
}

// Project is the granted project as box creates it.
func (g Grant) Project() incus.Project {
	cfg := g.ProjectConfig()
	// An empty value is the same as unset to Incus; leave them out of the request.
	maps.DeleteFunc(cfg, func(_, v string) bool { return v == "" })
	return incus.Project{
		Name:        GrantProject(g.UID),
		Description: fmt.Sprintf("box grant %s: the restricted box tier of uid %d", g.User, g.UID),
		Config:      cfg,
	}
}

// GrantDrift is one way a granted project differs from what grant set.
type GrantDrift struct {
	Key, Want, Got string
}

func (d GrantDrift) String() string {
	switch {
	case d.Got == "":
		return fmt.Sprintf("%s is unset (box sets %q)", d.Key, d.Want)
	case d.Want == "":
		return fmt.Sprintf("%s=%q was added (box sets nothing there)", d.Key, d.Got)
	}
	return fmt.Sprintf("%s=%q (box sets %q)", d.Key, d.Got, d.Want)
}

// ProjectDrift compares a granted project's config with g.ProjectConfig(). A limits.*
// key box did not set (the operator's own) is not drift; any other difference is, a
// limit box set and someone removed or changed too.
func (g Grant) ProjectDrift(got map[string]string) []GrantDrift {
	want := g.ProjectConfig()
	var out []GrantDrift
	keys := slices.Sorted(maps.Keys(want))
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		w, inWant := want[k]
		v := got[k]
		if !inWant && strings.HasPrefix(k, "limits.") {
			continue
		}
		if v != w {
			out = append(out, GrantDrift{Key: k, Want: w, Got: v})
		}
	}
	return out
}

// GrantProfiles are the profiles of a granted project: the placement profile, a copy
// of the default project's (the user's box new attaches it by name), and an empty
// default profile (incus-user's has a NIC on its private bridge and a root disk).
func GrantProfiles(placement incus.Profile) []incus.Profile {
	cp := incus.Profile{Name: placement.Name, Description: placement.Description,
		Config: maps.Clone(placement.Config), Devices: map[string]map[string]string{}}
	for k, d := range placement.Devices {
		cp.Devices[k] = maps.Clone(d)
	}
	if cp.Config == nil {
		cp.Config = map[string]string{}
	}
	return []incus.Profile{
		{Name: "default", Description: "box grant: empty; boxes use " + placement.Name,
			Config: map[string]string{}, Devices: map[string]map[string]string{}},
		cp,
	}
}

// ProfileDrift says how a granted project's profile differs from want ("" when equal).
func ProfileDrift(want incus.Profile, got *incus.Profile) string {
	if got == nil {
		return "profile " + want.Name + " is missing"
	}
	if !maps.Equal(nz(want.Config), nz(got.Config)) {
		return "profile " + want.Name + "'s config differs from box's"
	}
	if len(want.Devices) != len(got.Devices) {
		return "profile " + want.Name + "'s devices differ from box's"
	}
	for k, d := range want.Devices {
		if !maps.Equal(d, got.Devices[k]) {
			return "profile " + want.Name + "'s device " + k + " differs from box's"
		}
	}
	return ""
}

func nz(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// PlacementBridge is the network of the placement profile's NIC ("" without one).
func PlacementBridge(p incus.Profile) string {
	for _, k := range slices.Sorted(maps.Keys(p.Devices)) {
		if d := p.Devices[k]; d["type"] == "nic" && d["network"] != "" {
			return d["network"]
		}
	}
	return ""
}
