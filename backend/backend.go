// Package backend is what the box verbs ask of a backend: the interface both backends
// (bwrap boxes, vm boxes) implement, its plain request and result types, the typed
// errors a verb may answer with, the name and label rules, and the registry that says
// which backend holds a name. It knows no flags and no output format: the CLI turns
// flags into requests and results into tables or JSON.
package backend

import "time"

// Backend is one backend's side of the box verbs.
type Backend interface {
	Kind() string                                              // "vm" or "bwrap"
	Taken(name string) (bool, error)                           // does this backend have something called name?
	Mint(r MintRequest) error                                  // box new (and new --from)
	List() ([]Summary, error)                                  // box list
	Info(name string) (Info, error)                            // box info
	Enter(name string, l LaunchRequest) error                  // box shell
	Exec(name string, cmd []string, l LaunchRequest) error     // box exec
	Snapshot(name, label string) (string, error)               // box snapshot: the label taken
	Restore(name, snap string, force bool) error               // box restore
	Rename(old, nu string) error                               // box rename
	Delete(name string, force bool) error                      // box rm
	Start(name string) error                                   // box start
	Stop(name string, timeout time.Duration, force bool) error // box stop
}

// MintRequest is box new: a fresh box from a template (and profile), or a clone of
// From (BOX or BOX/SNAPSHOT).
type MintRequest struct {
	Name, Template, Profile, From string
	CPU, Memory, Disk             string
	VM, Container                 bool
	Timeout                       time.Duration
	// Backend is the backend asked for ("" lets the profile or source decide); Network
	// and Workdir are a bwrap box's tier and working directory.
	Backend, Network, Workdir string
	// SSHHosts are a bwrap box's --ssh-host destinations, stamped beside its profile's ssh.hosts.
	SSHHosts []string
	// Given are the settings the operator gave explicitly (named as the fields are, in
	// lower case: "cpu", "timeout", "network", ...), so a backend can refuse one it cannot
	// honour rather than ignore it, and tell a default from a choice.
	Given []string
}

// LaunchRequest is how a verb that launches a sandbox in a box asks for it.
type LaunchRequest struct {
	Yes       bool     // skip the environment audit's question
	AllowRoot bool     // run even though box runs as root
	Allow     []string // tier allowlist names for this launch, beside the profile's
	TTY       bool     // box exec -t: a terminal of the command's own (bwrap boxes)
	HostPorts []uint16 // --host-port: host loopback ports this session reaches (bwrap boxes)
}

// Summary is one box as box list shows it.
type Summary struct {
	Name       string
	State      string
	Type       string
	IPv4       string
	Template   string
	User       string
	Origin     string
	OriginFrom string
	Created    string // RFC 3339, UTC; "" when unknown
	Legacy     bool
	Location   string // the cluster member ("" off a cluster)
	Backend    string // "vm" or "bwrap"
	// bwrap boxes: the stamped profile, network tier and working directory ("" for vm)
	Profile string
	Network string
	Workdir string
}

// Info is one box as box info shows it: its summary, then resources and history.
type Info struct {
	Summary
	CPU, Memory, Disk string
	Snapshots         []SnapshotInfo // oldest first
	Exposed           []Exposure     // doors from the host's loopback (box expose; a bwrap box's profile's publish, Device "profile")
	HostPorts         []int          // a bwrap box's profile's host_ports: reached at every session as host.box.internal
	// Imported, ImportedLast and ImportedCount record box import's trips ("", "", 0 for
	// a box never imported).
	Imported, ImportedLast string
	ImportedCount          int
	Home                   string // a bwrap box's home directory on the host ("" for vm)
}

// SnapshotInfo is one snapshot of a box.
type SnapshotInfo struct {
	Name    string
	Created string // RFC 3339, UTC
}

// Exposure is one door from the host's loopback into a box: host port HostPort to
// the box's Port.
type Exposure struct {
	Device   string
	Port     int
	HostPort int
}
