package incus

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
)

// Metadata keys box stamps on an instance at mint. Clones carry them (Incus copies
// user.* keys) and get origin re-stamped.
const (
	KeyBox        = "user.box"
	KeyTemplate   = "user.box.template"
	KeyUser       = "user.box.user"
	KeySchema     = "user.box.schema"
	KeyCreated    = "user.box.created"
	KeyOrigin     = "user.box.origin"
	KeyOriginFrom = "user.box.origin.from"
	KeyRigRepo    = "user.box.rig.repo"
	KeyRigRef     = "user.box.rig.ref"
	// KeyAutostart starts the instance when incusd starts (a host reboot).
	KeyAutostart = "boot.autostart"
	// KeyLegacy tags boxes minted by claudebox, box's predecessor.
	KeyLegacy = "user.claudebox"

	KeyUserData = "cloud-init.user-data"
	KeyCPU      = "limits.cpu"
	KeyMemory   = "limits.memory"
	// KeyProcesses bounds a container's processes; Incus has it for containers only (a
	// VM's own kernel bounds its processes).
	KeyProcesses = "limits.processes"
	// KeyIsolatedIDs gives a container a host uid/gid range of its own (Incus picks a
	// free one from root's /etc/subuid and /etc/subgid). Without it every container
	// shares one range: box A's root is box B's root to the host kernel, which counts
	// some limits per host uid (fds in flight over unix sockets, pipe buffers, key
	// quotas) and would hand a process that got out of A every file of B.
	KeyIsolatedIDs = "security.idmap.isolated"

	// Schema is the version of the metadata stamp.
	Schema = "1"

	OriginMint  = "mint"
	OriginClone = "clone"
)

// InstancesPost is the body of POST /1.0/instances.
type InstancesPost struct {
	Name     string                       `json:"name"`
	Type     string                       `json:"type,omitempty"`
	Source   InstanceSource               `json:"source"`
	Config   map[string]string            `json:"config,omitempty"`
	Devices  map[string]map[string]string `json:"devices,omitempty"`
	Profiles []string                     `json:"profiles,omitempty"`
}

// InstanceSource says where a new instance comes from.
type InstanceSource struct {
	Type        string `json:"type"`                  // image, copy
	Alias       string `json:"alias,omitempty"`       // type image
	Fingerprint string `json:"fingerprint,omitempty"` // type image
	// Server, Protocol and Mode fetch an image from a remote image server (type image).
	Server   string `json:"server,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Source   string `json:"source,omitempty"` // type copy: "inst" or "inst/snap"
	// InstanceOnly copies the instance without its snapshots. A clone of a box keeps
	// them, as incus copy does ('pristine' among them); a copy of a snapshot has none.
	InstanceOnly bool `json:"instance_only,omitempty"`
}

// Mint is what box needs to mint a box. Every field but UserData is required.
type Mint struct {
	Name    string
	VM      bool   // virtual-machine, else container
	Profile string // the placement profile (NIC + root disk), and nothing else
	Image   string // an image alias, or a fingerprint (ImageFingerprint)
	CPU     string // limits.cpu, e.g. "2"
	Memory  string // limits.memory, e.g. "2GiB"
	// Processes is limits.processes (containers only; 0 leaves it unset).
	Processes int
	// IsolatedIDs sets security.idmap.isolated (containers only): a host uid range of
	// the box's own.
	IsolatedIDs bool
	Disk        string // root disk size, e.g. "20GiB"
	Pool        string // storage pool of the profile's root disk (an override must name it)
	UserData    string // cloud-init user-data, passed verbatim
	Template    string
	User        string
	Created     time.Time
	// Autostart sets boot.autostart (the template's BOX_AUTOSTART): the box comes back
	// after a host reboot. A clone keeps it (Incus copies the config).
	Autostart bool
	// RigRepo and RigRef are stamped when the user-data's rig pin tokens were resolved.
	RigRepo, RigRef string
}

// ImageFingerprint reports whether s looks like an image fingerprint (or a prefix of
// one) rather than an alias: hex only, at least 12 characters.
func ImageFingerprint(s string) bool {
	if len(s) < 12 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// Remotes are the image servers an image may name as REMOTE:ALIAS, as the incus CLI's
// default remotes do. "local:" (or no prefix) is the daemon's own image store.
var Remotes = map[string]struct{ Server, Protocol string }{
	"images": {"https://images.linuxcontainers.org", "simplestreams"},
}

// ImageSource turns a template's image into the source of a create request: a local
// alias ("box/debian-13"), a local fingerprint, or REMOTE:ALIAS for a known remote
// ("images:debian/12/cloud"), which incusd pulls from that server.
func ImageSource(image string) (InstanceSource, error) {
	remote, alias, ok := strings.Cut(image, ":")
	if !ok {
		remote, alias = "local", image
	}
	if alias == "" {
		return InstanceSource{}, fmt.Errorf("image %q: empty alias", image)
	}
	if remote == "local" {
		if ImageFingerprint(alias) {
			return InstanceSource{Type: "image", Fingerprint: alias}, nil
		}
		return InstanceSource{Type: "image", Alias: alias}, nil
	}
	r, known := Remotes[remote]
	if !known {
		return InstanceSource{}, fmt.Errorf("image %q: unknown image server %q (known: images, local)", image, remote)
	}
	src := InstanceSource{Type: "image", Server: r.Server, Protocol: r.Protocol, Mode: "pull", Alias: alias}
	if ImageFingerprint(alias) {
		src.Alias, src.Fingerprint = "", alias
	}
	return src, nil
}

// MintRequest builds the create request of a new box. The placement profile is the only
// profile (Incus then skips the default profile); resources land as limits and a root
// disk override; the template's metadata is stamped so nothing downstream re-reads it.
func MintRequest(m Mint) (InstancesPost, error) {
	if err := ValidateName(m.Name); err != nil {
		return InstancesPost{}, err
	}
	for _, f := range []struct{ name, v string }{
		{"placement profile", m.Profile}, {"image", m.Image}, {"cpu", m.CPU},
		{"memory", m.Memory}, {"disk", m.Disk}, {"storage pool", m.Pool},
		{"template", m.Template}, {"user", m.User},
	} {
		if strings.TrimSpace(f.v) == "" {
			return InstancesPost{}, fmt.Errorf("mint box %q: %s is required", m.Name, f.name)
		}
	}
	if m.Created.IsZero() {
		return InstancesPost{}, fmt.Errorf("mint box %q: creation time is required", m.Name)
	}
	typ := TypeContainer
	if m.VM {
		typ = TypeVM
	}
	if m.VM && m.Processes > 0 {
		return InstancesPost{}, fmt.Errorf("mint box %q: %s is for containers only", m.Name, KeyProcesses)
	}
	if m.VM && m.IsolatedIDs {
		return InstancesPost{}, fmt.Errorf("mint box %q: %s is for containers only", m.Name, KeyIsolatedIDs)
	}
	src, err := ImageSource(m.Image)
	if err != nil {
		return InstancesPost{}, fmt.Errorf("mint box %q: %w", m.Name, err)
	}
	cfg := map[string]string{
		KeyCPU:      m.CPU,
		KeyMemory:   m.Memory,
		KeyBox:      "1",
		KeyTemplate: m.Template,
		KeyUser:     m.User,
		KeySchema:   Schema,
		KeyCreated:  stamp(m.Created),
		KeyOrigin:   OriginMint,
	}
	if m.UserData != "" {
		cfg[KeyUserData] = m.UserData
	}
	if m.Processes > 0 {
		cfg[KeyProcesses] = strconv.Itoa(m.Processes)
	}
	if m.Autostart {
		cfg[KeyAutostart] = "true"
	}
	if m.IsolatedIDs {
		cfg[KeyIsolatedIDs] = "true"
	}
	if m.RigRepo != "" {
		cfg[KeyRigRepo], cfg[KeyRigRef] = m.RigRepo, m.RigRef
	}
	return InstancesPost{
		Name:     m.Name,
		Type:     typ,
		Source:   src,
		Config:   cfg,
		Devices:  map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": m.Pool, "size": m.Disk}},
		Profiles: []string{m.Profile},
	}, nil
}

// Clone is what box needs to clone a box, or one of its snapshots, into a new box.
type Clone struct {
	Name     string
	From     string // source box
	Snapshot string // optional snapshot of From
	Profile  string // the placement profile, re-applied so a clone cannot leave the stack
	Created  time.Time
	// IsolatedIDs sets security.idmap.isolated on the copy (a container source): a clone
	// of a box minted before box set it gets a range of its own too. Incus gives the
	// copy a fresh range either way and shifts its files on first start.
	IsolatedIDs bool
}

// CloneRequest builds the copy request of a clone. Incus copies the source's config, so
// the template stamp (user.box.*) rides along; only provenance is re-stamped. Volatile
// keys (MAC address) are regenerated by Incus.
func CloneRequest(c Clone) (InstancesPost, error) {
	if err := ValidateName(c.Name); err != nil {
		return InstancesPost{}, err
	}
	if err := ValidateName(c.From); err != nil {
		return InstancesPost{}, fmt.Errorf("clone source: %w", err)
	}
	if strings.TrimSpace(c.Profile) == "" {
		return InstancesPost{}, fmt.Errorf("clone box %q: placement profile is required", c.Name)
	}
	if c.Created.IsZero() {
		return InstancesPost{}, fmt.Errorf("clone box %q: creation time is required", c.Name)
	}
	from := c.From
	if c.Snapshot != "" {
		if err := ValidateSnapshotName(c.Snapshot); err != nil {
			return InstancesPost{}, err
		}
		from += "/" + c.Snapshot
	}
	cfg := map[string]string{
		KeyCreated:    stamp(c.Created),
		KeyOrigin:     OriginClone,
		KeyOriginFrom: from,
	}
	if c.IsolatedIDs {
		cfg[KeyIsolatedIDs] = "true"
	}
	return InstancesPost{
		Name:     c.Name,
		Source:   InstanceSource{Type: "copy", Source: from, InstanceOnly: c.Snapshot != ""},
		Config:   cfg,
		Profiles: []string{c.Profile},
	}, nil
}

// SnapshotPost is the body of POST /1.0/instances/{name}/snapshots.
type SnapshotPost struct {
	Name     string `json:"name"`
	Stateful bool   `json:"stateful"`
}

// SnapshotRequest builds a (stateless) snapshot request.
func SnapshotRequest(label string) (SnapshotPost, error) {
	if err := ValidateSnapshotName(label); err != nil {
		return SnapshotPost{}, err
	}
	return SnapshotPost{Name: label}, nil
}

// RestorePut is the body of PUT /1.0/instances/{name} that restores a snapshot.
type RestorePut struct {
	Restore  string `json:"restore"`
	Stateful bool   `json:"stateful"`
}

// RestoreRequest builds a restore request.
func RestoreRequest(snapshot string) (RestorePut, error) {
	if err := ValidateSnapshotName(snapshot); err != nil {
		return RestorePut{}, err
	}
	return RestorePut{Restore: snapshot}, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ValidateName checks an instance name before any call: box's name rule
// (backend.ValidName), which is Incus's.
func ValidateName(name string) error { return backend.ValidName(name) }

// ValidateSnapshotName checks a snapshot label (backend.ValidLabel).
func ValidateSnapshotName(name string) error { return backend.ValidLabel(name) }
