package vm

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"gopkg.in/yaml.v3"
)

// An export is an Incus instance backup: a tarball (gzip-compressed by box export)
// whose first member, backup/index.yaml, describes the instance, its snapshots and
// their config. box import reads that index before uploading anything.

// IndexPath is where an Incus backup describes itself.
const IndexPath = "backup/index.yaml"

// BackupIndex is what box reads of backup/index.yaml.
type BackupIndex struct {
	Name      string   `yaml:"name"`
	Backend   string   `yaml:"backend"`
	Pool      string   `yaml:"pool"`
	Snapshots []string `yaml:"snapshots"`
	// Optimized: the volumes are the storage driver's own send streams (btrfs, zfs),
	// which incusd replays on the host with the driver's tools. box export never asks
	// for them.
	Optimized bool `yaml:"optimized"`
	Config    struct {
		Instance *BackupConfig  `yaml:"container"` // "container" for VMs too
		Snaps    []BackupConfig `yaml:"snapshots"`
	} `yaml:"config"`
}

// BackupConfig is an instance's (or a snapshot's) own config as the backup holds it.
type BackupConfig struct {
	Name     string                       `yaml:"name"`
	Type     string                       `yaml:"type"`
	Config   map[string]string            `yaml:"config"`
	Devices  map[string]map[string]string `yaml:"devices"`
	Profiles []string                     `yaml:"profiles"`
}

// NotExportError: the file is not an Incus instance backup box can read.
type NotExportError struct {
	File string
	Why  string
}

func (e *NotExportError) Error() string {
	return fmt.Sprintf("%s is not a box export: %s", e.File, e.Why)
}

// maxIndex bounds the index: it is a page of YAML, never megabytes.
const maxIndex = 4 << 20

// ReadBackupIndex reads the index at the head of an export read from r (gzip or plain
// tar). It reads only as far as the index. file names the export in errors.
func ReadBackupIndex(r io.Reader, file string) (*BackupIndex, error) {
	br := bufio.NewReader(r)
	var tr *tar.Reader
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &NotExportError{file, "bad gzip: " + err.Error()}
		}
		tr = tar.NewReader(zr)
	} else {
		tr = tar.NewReader(br)
	}
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err != nil {
			why := "no " + IndexPath + " in it"
			if !errors.Is(err, io.EOF) {
				why = "not a tarball (" + err.Error() + ")"
			}
			return nil, &NotExportError{file, why}
		}
		if strings.TrimPrefix(h.Name, "./") != IndexPath {
			if i >= 8 { // Incus writes the index first; a file that buries it is not an export
				return nil, &NotExportError{file, IndexPath + " is not at its head"}
			}
			continue
		}
		if h.Size > maxIndex {
			return nil, &NotExportError{file, IndexPath + " is too large"}
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxIndex))
		if err != nil {
			return nil, &NotExportError{file, "cannot read " + IndexPath + ": " + err.Error()}
		}
		var idx BackupIndex
		if err := yaml.Unmarshal(b, &idx); err != nil {
			return nil, &NotExportError{file, IndexPath + ": " + err.Error()}
		}
		if idx.Config.Instance == nil || idx.Name == "" {
			return nil, &NotExportError{file, IndexPath + " describes no instance (a legacy or a volume backup)"}
		}
		return &idx, nil
	}
}

// OffStackError: an instance (or a snapshot of it, which a restore would bring back)
// carries a key or a device box never gives a box, which could move it off the
// isolation stack: a host path, another NIC, a security or raw key.
type OffStackError struct {
	Where string // "instance" or "snapshot NAME"
	What  string // `config key "security.privileged"`, `device "host" (disk)`
}

func (e *OffStackError) Error() string {
	return fmt.Sprintf("the %s sets %s, which box never gives a box (it could move the box off the isolation stack)", e.Where, e.What)
}

// importableKey reports whether an instance's own config key is one a box minted by box
// can carry: its stamp and user keys, the resources box sets, cloud-init, what Incus
// records of the image, and Incus's volatile state.
func importableKey(k string) bool {
	for _, p := range []string{"user.", "volatile.", "image.", "cloud-init."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	// security.idmap.isolated: box sets it on every container (import sets it to true).
	return k == incus.KeyCPU || k == incus.KeyMemory || k == incus.KeyProcesses || k == incus.KeyIsolatedIDs
}

// CheckShape refuses config and devices a box minted by box never has. where names
// the instance or snapshot in the error. It is pure.
func CheckShape(where string, config map[string]string, devices map[string]map[string]string) error {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !importableKey(k) {
			return &OffStackError{where, fmt.Sprintf("config key %q", k)}
		}
	}
	names := make([]string, 0, len(devices))
	for n := range devices {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := devices[n]
		if _, ok := ParseExposure(n, d); ok {
			continue // a loopback door of box's own shape; import does not carry it over
		}
		if n != "root" || d["type"] != "disk" || d["path"] != "/" {
			return &OffStackError{where, fmt.Sprintf("device %q (%s)", n, d["type"])}
		}
		for k := range d {
			if !slices.Contains([]string{"type", "path", "pool", "size"}, k) {
				return &OffStackError{where, fmt.Sprintf("root disk key %q", k)}
			}
		}
	}
	return nil
}

// CheckIndex enforces the tag boundary and the box shape on an export before anything
// is uploaded: its instance must be a box (user.box=1, or legacy user.claudebox=1), and
// neither it nor any snapshot may carry what box never gives a box.
func CheckIndex(idx *BackupIndex) error {
	inst := idx.Config.Instance
	if !incus.IsBox(incus.Instance{Config: inst.Config}) {
		return &NotBoxExportError{Name: idx.Name}
	}
	if idx.Optimized {
		return &OffStackError{"export", "optimized storage (a storage driver's send stream, replayed on the host)"}
	}
	if err := CheckShape("instance", inst.Config, inst.Devices); err != nil {
		return err
	}
	for _, s := range idx.Config.Snaps {
		if err := CheckShape("snapshot "+s.Name, s.Config, s.Devices); err != nil {
			return err
		}
	}
	return nil
}

// NotBoxExportError: the export holds an instance box did not mint.
type NotBoxExportError struct{ Name string }

func (e *NotBoxExportError) Error() string {
	return fmt.Sprintf("the export's instance %q is not a box: box never takes in an instance it did not mint", e.Name)
}

func (e *NotBoxExportError) Hint() string {
	return "boxes are tagged user.box=1 (or user.claudebox=1); to import it anyway, use incus import, outside box"
}

// Keys an import records (upstream's shape): the first import is pinned, the last one
// and the count are updated on every trip. The mint stamp (origin, created, template,
// user) stays as the export carried it.
const (
	KeyImported      = "user.box.imported"
	KeyImportedLast  = "user.box.imported.last"
	KeyImportedCount = "user.box.imported.count"
)

// ImportStamp is the config an import sets on the imported box, given its config as
// imported, at now.
func ImportStamp(config map[string]string, now time.Time) map[string]string {
	t := now.UTC().Format(time.RFC3339)
	n := 0
	if _, err := fmt.Sscanf(config[KeyImportedCount], "%d", &n); err != nil || n < 0 {
		n = 0
	}
	out := map[string]string{KeyImportedLast: t, KeyImportedCount: fmt.Sprint(n + 1)}
	if config[KeyImported] == "" {
		out[KeyImported] = t
	}
	return out
}

// HostIdentityKeys are the volatile keys that tie an instance to the host it ran on and
// must not be shared with the box it was exported from: every NIC's MAC, a VM's UUID
// (its SMBIOS UUID, from which systemd derives its machine-id), generation ID and vsock
// ID. Unset before the first start, Incus generates new ones.
func HostIdentityKeys(config map[string]string) []string {
	var out []string
	for k := range config {
		if strings.HasPrefix(k, "volatile.") && strings.HasSuffix(k, ".hwaddr") ||
			k == "volatile.uuid" || k == "volatile.uuid.generation" || k == "volatile.vsock_id" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
