package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func tarball(t *testing.T, gz bool, files ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&b)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&b)
	}
	for _, f := range files {
		w.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1]))})
		w.Write([]byte(f[1]))
	}
	w.Close()
	if zw != nil {
		zw.Close()
	}
	return b.Bytes()
}

const indexYAML = `name: work
backend: dir
pool: default
snapshots:
- authed
config:
  container:
    name: work
    type: container
    config:
      user.box: "1"
      user.box.user: dev
      limits.cpu: "2"
      volatile.eth0.hwaddr: 00:16:3e:00:00:01
    devices:
      root: {type: disk, path: /, pool: default, size: 20GiB}
    profiles: [box-net]
  snapshots:
  - name: authed
    config:
      user.box: "1"
    devices: {}
`

func TestReadBackupIndex(t *testing.T) {
	for _, gz := range []bool{true, false} {
		data := tarball(t, gz, [2]string{"backup/index.yaml", indexYAML}, [2]string{"backup/container/rootfs/etc/hostname", "x"})
		idx, err := ReadBackupIndex(bytes.NewReader(data), "f")
		if err != nil {
			t.Fatal(err)
		}
		if idx.Name != "work" || idx.Config.Instance.Config["user.box.user"] != "dev" || len(idx.Config.Snaps) != 1 || idx.Config.Snaps[0].Name != "authed" {
			t.Errorf("gzip %v: %+v", gz, idx)
		}
		if err := CheckIndex(idx); err != nil {
			t.Errorf("a box's export refused: %v", err)
		}
	}
	var ne *NotExportError
	for name, data := range map[string][]byte{
		"not a tarball": []byte("BOX_USER=dev\n"),
		"no index":      tarball(t, true, [2]string{"etc/passwd", "root:x:0:0"}),
		"no instance":   tarball(t, true, [2]string{"backup/index.yaml", "name: vol\n"}),
		"bad yaml":      tarball(t, false, [2]string{"backup/index.yaml", "name: [\n"}),
	} {
		if _, err := ReadBackupIndex(bytes.NewReader(data), "f"); !errors.As(err, &ne) {
			t.Errorf("%s: %v, want NotExportError", name, err)
		}
	}
}

func TestCheckIndexRefuses(t *testing.T) {
	read := func(y string) *BackupIndex {
		idx, err := ReadBackupIndex(bytes.NewReader(tarball(t, true, [2]string{"backup/index.yaml", y})), "f")
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	var nb *NotBoxExportError
	if err := CheckIndex(read(strings.Replace(indexYAML, `user.box: "1"
      user.box.user`, `user.owner: x
      user.box.user`, 1))); !errors.As(err, &nb) {
		t.Errorf("untagged instance: %v", err)
	}
	var off *OffStackError
	for name, y := range map[string]string{
		"host path":   strings.Replace(indexYAML, "    profiles: [box-net]", "      host: {type: disk, source: /, path: /host}\n    profiles: [box-net]", 1),
		"privileged":  strings.Replace(indexYAML, `      limits.cpu: "2"`, `      security.privileged: "true"`, 1),
		"raw.lxc":     strings.Replace(indexYAML, `      limits.cpu: "2"`, `      raw.lxc: "lxc.mount.entry = / host none bind"`, 1),
		"own nic":     strings.Replace(indexYAML, "    profiles: [box-net]", "      eth1: {type: nic, nictype: macvlan, parent: eth0}\n    profiles: [box-net]", 1),
		"root source": strings.Replace(indexYAML, "pool: default, size: 20GiB}", "pool: default, source: /srv}", 1),
		"snapshot":    strings.Replace(indexYAML, "    devices: {}\n", "    devices:\n      host: {type: disk, source: /, path: /h}\n", 1),
		"optimized":   "optimized: true\n" + indexYAML,
	} {
		if err := CheckIndex(read(y)); !errors.As(err, &off) {
			t.Errorf("%s: %v, want OffStackError", name, err)
		}
	}
	// The limits box sets at mint are box-shaped, limits.processes (containers) too.
	if err := CheckShape("instance", map[string]string{"limits.cpu": "2", "limits.memory": "2GiB", "limits.processes": "4096"}, nil); err != nil {
		t.Errorf("box's own limits refused: %v", err)
	}
	// So is the host uid range of its own box sets on a container (import sets it true
	// whatever the export says); any other security.idmap key is not.
	if err := CheckShape("instance", map[string]string{"security.idmap.isolated": "true"}, nil); err != nil {
		t.Errorf("security.idmap.isolated refused: %v", err)
	}
	for _, k := range []string{"security.idmap.base", "security.idmap.size", "raw.idmap"} {
		if err := CheckShape("instance", map[string]string{k: "1000000"}, nil); !errors.As(err, &off) {
			t.Errorf("%s: %v, want OffStackError", k, err)
		}
	}
	// box's own door is box-shaped; a proxy that listens elsewhere is not.
	_, door := ExposureDevice(3000, 3000)
	if err := CheckShape("instance", nil, map[string]map[string]string{"expose-3000": door}); err != nil {
		t.Errorf("box's exposure refused: %v", err)
	}
	wide := map[string]string{"type": "proxy", "bind": "host", "listen": "tcp:0.0.0.0:3000", "connect": "tcp:127.0.0.1:3000"}
	if err := CheckShape("instance", nil, map[string]map[string]string{"expose-3000": wide}); !errors.As(err, &off) {
		t.Errorf("a proxy listening on every address: %v", err)
	}
}

func TestImportStamp(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first := ImportStamp(map[string]string{}, t0)
	if !reflect.DeepEqual(first, map[string]string{KeyImported: "2026-01-02T03:04:05Z", KeyImportedLast: "2026-01-02T03:04:05Z", KeyImportedCount: "1"}) {
		t.Errorf("first: %v", first)
	}
	t1 := t0.Add(time.Hour)
	second := ImportStamp(first, t1)
	if _, ok := second[KeyImported]; ok || second[KeyImportedCount] != "2" || second[KeyImportedLast] != "2026-01-02T04:04:05Z" {
		t.Errorf("second: %v (the first import stays pinned)", second)
	}
	if got := ImportStamp(map[string]string{KeyImportedCount: "08x"}, t1)[KeyImportedCount]; got != "9" && got != "1" {
		t.Errorf("garbage count: %q", got)
	}
}

func TestHostIdentityKeys(t *testing.T) {
	got := HostIdentityKeys(map[string]string{"volatile.eth0.hwaddr": "m", "volatile.uuid": "u", "volatile.uuid.generation": "g",
		"volatile.vsock_id": "3", "volatile.idmap.next": "[]", "user.box": "1", "volatile.eth0.host_name": "veth1"})
	want := []string{"volatile.eth0.hwaddr", "volatile.uuid", "volatile.uuid.generation", "volatile.vsock_id"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

func TestParsePortAndExposure(t *testing.T) {
	for _, bad := range []string{"0", "65536", "-1", "abc", "08", "", "80x"} {
		if _, err := ParsePort("port", bad); err == nil {
			t.Errorf("port %q accepted", bad)
		}
	}
	if p, err := ParsePort("port", "65535"); err != nil || p != 65535 {
		t.Errorf("65535: %d %v", p, err)
	}
	name, d := ExposureDevice(3000, 8080)
	e, ok := ParseExposure(name, d)
	if !ok || e.Port != 3000 || e.HostPort != 8080 || d["listen"] != "tcp:127.0.0.1:8080" || d["connect"] != "tcp:127.0.0.1:3000" || d["bind"] != "host" {
		t.Errorf("%s %v -> %+v %v", name, d, e, ok)
	}
	d["nat"] = "true"
	if _, ok := ParseExposure(name, d); ok {
		t.Error("an extra key still counts as box's door")
	}
}
