package incus

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var created = time.Date(2026, 7, 14, 9, 30, 0, 0, time.UTC)

const userData = "#cloud-config\nusers:\n  - name: dev\n    shell: /bin/bash\n    sudo: ALL=(ALL) NOPASSWD:ALL\n"

func mint(vm bool) Mint {
	return Mint{
		Name: "work", VM: vm, Profile: "box-net", Image: "box/debian-13",
		CPU: "2", Memory: "2GiB", Disk: "20GiB", Pool: "default",
		UserData: userData, Template: "blank", User: "dev", Created: created,
	}
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: request body differs from the golden file\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestGoldenMintVM(t *testing.T) {
	req, err := MintRequest(mint(true))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mint-vm", req)
}

// A VM of a server-class template (BOX_AUTOSTART) with a rig pin: boot.autostart and
// the pin's stamp are in the request.
func TestGoldenMintVMAutostart(t *testing.T) {
	m := mint(true)
	m.Autostart, m.RigRepo, m.RigRef = true, "heavy-duty/rig", "main"
	req, err := MintRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mint-vm-autostart", req)
}

func TestGoldenMintContainer(t *testing.T) {
	req, err := MintRequest(mint(false))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mint-container", req)
}

func TestMintProcesses(t *testing.T) {
	m := mint(false)
	m.Processes = 4096
	req, err := MintRequest(m)
	if err != nil || req.Config[KeyProcesses] != "4096" {
		t.Errorf("container: %v %q", err, req.Config[KeyProcesses])
	}
	m = mint(true)
	m.Processes = 4096
	if _, err := MintRequest(m); err == nil || !strings.Contains(err.Error(), "containers only") {
		t.Errorf("VM with limits.processes: %v", err)
	}
}

// A container box asks for a host uid range of its own; a VM cannot take the key, and a
// clone of a container asks for one whatever its source had.
func TestMintIsolatedIDs(t *testing.T) {
	m := mint(false)
	m.IsolatedIDs = true
	req, err := MintRequest(m)
	if err != nil || req.Config[KeyIsolatedIDs] != "true" {
		t.Errorf("container: %v %q", err, req.Config[KeyIsolatedIDs])
	}
	if req, _ := MintRequest(mint(false)); req.Config[KeyIsolatedIDs] != "" {
		t.Errorf("not asked, set: %q", req.Config[KeyIsolatedIDs])
	}
	m = mint(true)
	m.IsolatedIDs = true
	if _, err := MintRequest(m); err == nil || !strings.Contains(err.Error(), "containers only") {
		t.Errorf("VM with %s: %v", KeyIsolatedIDs, err)
	}
	req, err = CloneRequest(Clone{Name: "b", From: "a", Profile: "p", Created: created, IsolatedIDs: true})
	if err != nil || req.Config[KeyIsolatedIDs] != "true" {
		t.Errorf("clone: %v %q", err, req.Config[KeyIsolatedIDs])
	}
	if req, _ := CloneRequest(Clone{Name: "b", From: "a", Profile: "p", Created: created}); req.Config[KeyIsolatedIDs] != "" {
		t.Errorf("a VM's clone: %q", req.Config[KeyIsolatedIDs])
	}
}

func TestGoldenMintByFingerprint(t *testing.T) {
	m := mint(false)
	m.Image = "a1b2c3d4e5f6a7b8"
	m.UserData = ""
	req, err := MintRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mint-fingerprint", req)
}

func TestGoldenMintFromRemote(t *testing.T) {
	m := mint(true)
	m.Image = "images:debian/12/cloud"
	req, err := MintRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mint-remote", req)
}

func TestImageSource(t *testing.T) {
	for image, want := range map[string]InstanceSource{
		"box/debian-13":          {Type: "image", Alias: "box/debian-13"},
		"local:box/debian-13":    {Type: "image", Alias: "box/debian-13"},
		"a1b2c3d4e5f6a7b8":       {Type: "image", Fingerprint: "a1b2c3d4e5f6a7b8"},
		"images:debian/12/cloud": {Type: "image", Alias: "debian/12/cloud", Server: "https://images.linuxcontainers.org", Protocol: "simplestreams", Mode: "pull"},
	} {
		got, err := ImageSource(image)
		if err != nil || got != want {
			t.Errorf("ImageSource(%q) = %+v, %v; want %+v", image, got, err, want)
		}
	}
	for _, image := range []string{"ubuntu:24.04", "images:", ""} {
		if _, err := ImageSource(image); err == nil {
			t.Errorf("ImageSource(%q) accepted", image)
		}
	}
}

func TestGoldenCloneFromInstance(t *testing.T) {
	req, err := CloneRequest(Clone{Name: "feature", From: "work", Profile: "box-net", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "clone-instance", req)
}

func TestGoldenCloneFromSnapshot(t *testing.T) {
	req, err := CloneRequest(Clone{Name: "feature", From: "work", Snapshot: "authed", Profile: "box-net", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "clone-snapshot", req)
}

func TestGoldenSnapshot(t *testing.T) {
	req, err := SnapshotRequest("authed")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "snapshot", req)
}

func TestGoldenRestore(t *testing.T) {
	req, err := RestoreRequest("authed")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "restore", req)
}

// The mint carries the placement profile only, and the user-data byte for byte.
func TestMintInvariants(t *testing.T) {
	req, err := MintRequest(mint(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Profiles) != 1 || req.Profiles[0] != "box-net" {
		t.Errorf("profiles = %v, want only the placement profile", req.Profiles)
	}
	if req.Config[KeyUserData] != userData {
		t.Errorf("user-data changed on the way: %q", req.Config[KeyUserData])
	}
	for k := range req.Config {
		if strings.HasPrefix(k, "security.") || strings.Contains(k, "network") {
			t.Errorf("mint sets %s: networking and security belong to the profile", k)
		}
	}
	for name, d := range req.Devices {
		if d["type"] != "disk" || name != "root" {
			t.Errorf("mint adds device %s %v: only the root disk size may be overridden", name, d)
		}
	}
}

func TestMintRequiresFields(t *testing.T) {
	m := mint(false)
	m.Profile = ""
	if _, err := MintRequest(m); err == nil || !strings.Contains(err.Error(), "placement profile") {
		t.Errorf("missing profile: err = %v", err)
	}
	m = mint(false)
	m.Created = time.Time{}
	if _, err := MintRequest(m); err == nil {
		t.Error("missing creation time accepted")
	}
	m = mint(false)
	m.Name = "1work"
	if _, err := MintRequest(m); err == nil || !strings.Contains(err.Error(), "digit") {
		t.Errorf("bad name: err = %v", err)
	}
}

func TestCloneValidates(t *testing.T) {
	if _, err := CloneRequest(Clone{Name: "b", From: "a", Snapshot: "x/y", Profile: "p", Created: created}); err == nil {
		t.Error("snapshot name with / accepted")
	}
	if _, err := CloneRequest(Clone{Name: "b", From: "-a", Profile: "p", Created: created}); err == nil {
		t.Error("bad source name accepted")
	}
	if _, err := CloneRequest(Clone{Name: "b", From: "a", Created: created}); err == nil {
		t.Error("clone without placement profile accepted")
	}
}

func TestValidateName(t *testing.T) {
	good := []string{"a", "work", "Work-2", "a-b-c", strings.Repeat("x", 63)}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want ok", n, err)
		}
	}
	bad := map[string]string{
		"":                      "empty",
		strings.Repeat("x", 64): "63",
		"1abc":                  "digit",
		"-abc":                  "hyphen",
		"abc-":                  "hyphen",
		"a_b":                   "not allowed",
		"a.b":                   "not allowed",
		"a b":                   "not allowed",
		"a/b":                   "not allowed",
		"café":                  "not allowed",
	}
	for n, want := range bad {
		err := ValidateName(n)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %v, want an error mentioning %q", n, err, want)
		}
	}
}

func TestValidateSnapshotName(t *testing.T) {
	for _, n := range []string{"authed", "manual-1752485400", "pristine", "v1.2"} {
		if err := ValidateSnapshotName(n); err != nil {
			t.Errorf("ValidateSnapshotName(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"", "a/b", "a b", "..", strings.Repeat("s", 64)} {
		if err := ValidateSnapshotName(n); err == nil {
			t.Errorf("ValidateSnapshotName(%q) accepted", n)
		}
	}
}

func TestTags(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]string
		box    bool
		user   string
	}{
		{"untagged", map[string]string{"limits.cpu": "2"}, false, "root"},
		{"nil config", nil, false, "root"},
		{"box with user", map[string]string{KeyBox: "1", KeyUser: "dev"}, true, "dev"},
		{"box without user", map[string]string{KeyBox: "1"}, true, "root"},
		{"legacy", map[string]string{KeyLegacy: "1"}, true, "claude"},
		{"legacy with user", map[string]string{KeyLegacy: "1", KeyUser: "dev"}, true, "dev"},
		{"legacy, empty user", map[string]string{KeyLegacy: "1", KeyUser: ""}, true, "claude"},
		{"tag not 1", map[string]string{KeyBox: "true"}, false, "root"},
		{"user but no tag", map[string]string{KeyUser: "dev"}, false, "dev"},
	}
	for _, c := range cases {
		inst := Instance{Name: "x", Config: c.config}
		if got := IsBox(inst); got != c.box {
			t.Errorf("%s: IsBox = %v, want %v", c.name, got, c.box)
		}
		if got := UserOf(inst); got != c.user {
			t.Errorf("%s: UserOf = %q, want %q", c.name, got, c.user)
		}
	}
}

func TestSocketPath(t *testing.T) {
	t.Setenv("INCUS_SOCKET", "")
	t.Setenv("INCUS_DIR", "")
	if got := SocketPath(); got != DefaultSocket {
		t.Errorf("default = %q", got)
	}
	t.Setenv("INCUS_DIR", "/tmp/lab/incus")
	if got := SocketPath(); got != "/tmp/lab/incus/unix.socket" {
		t.Errorf("INCUS_DIR: %q", got)
	}
	t.Setenv("INCUS_SOCKET", "/run/x.sock")
	if got := SocketPath(); got != "/run/x.sock" {
		t.Errorf("INCUS_SOCKET wins: %q", got)
	}
}
