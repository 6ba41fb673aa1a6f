package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestGrantProjectDrift(t *testing.T) {
	g := Grant{User: "alice", UID: 1001, Bridge: "boxnet"}
	if d := g.ProjectDrift(g.ProjectConfig()); len(d) != 0 {
		t.Fatalf("box's own config drifts: %v", d)
	}
	// What Incus keeps: empty values are unset.
	stored := g.Project().Config
	if d := g.ProjectDrift(stored); len(d) != 0 {
		t.Fatalf("the stored config drifts: %v", d)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
		want string // "" for no drift
	}{
		{"an operator's limit tightens", func(m map[string]string) { m["limits.instances"] = "3" }, ""},
		{"nesting allowed", func(m map[string]string) { m["restricted.containers.nesting"] = "allow" }, "restricted.containers.nesting"},
		{"a second network", func(m map[string]string) { m["restricted.networks.access"] = "boxnet,incusbr0" }, "restricted.networks.access"},
		{"host paths", func(m map[string]string) { m["restricted.devices.disk.paths"] = "/home/alice" }, "was added"},
		{"the restriction lifted", func(m map[string]string) { delete(m, "restricted") }, "restricted is unset"},
		{"shared images", func(m map[string]string) { m["features.images"] = "false" }, "features.images"},
		{"another owner", func(m map[string]string) { m[GrantKey] = "mallory" }, GrantKey},
		{"an unknown key", func(m map[string]string) { m["restricted.whatever"] = "allow" }, "restricted.whatever"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := g.Project().Config
			tc.edit(cfg)
			d := g.ProjectDrift(cfg)
			var s []string
			for _, x := range d {
				s = append(s, x.String())
			}
			got := strings.Join(s, "; ")
			switch {
			case tc.want == "" && len(d) > 0:
				t.Errorf("drift %q, want none", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("drift %q, want it to name %q", got, tc.want)
			}
		})
	}
}

func TestGrantPolicy(t *testing.T) {
	cfg := Grant{User: "alice", UID: 1001, Bridge: "boxnet"}.ProjectConfig()
	for k, v := range map[string]string{
		"restricted": "true", "restricted.networks.access": "boxnet", "restricted.devices.disk": "managed",
		"restricted.containers.nesting": "block", "restricted.containers.privilege": "isolated",
		"restricted.containers.lowlevel": "block", "restricted.virtual-machines.lowlevel": "block",
		"restricted.devices.proxy": "block", "features.images": "true", "features.profiles": "true", "features.networks": "false",
	} {
		if cfg[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg[k], v)
		}
	}
	if p := (Grant{User: "alice", UID: 1001, Bridge: "boxnet"}).Project(); p.Name != "user-1001" || p.Config["restricted.devices.disk.paths"] != "" {
		t.Errorf("project %+v", p)
	}
}

func TestGrantNames(t *testing.T) {
	if GrantProject(1001) != "user-1001" || GrantCertName(1001) != "incus-user-1001" {
		t.Error(GrantProject(1001), GrantCertName(1001))
	}
	if UserBridge(1001) != "incusbr-1001" || UserBridge(123456789) != "user-123456789" {
		t.Error(UserBridge(1001), UserBridge(123456789))
	}
	for s, want := range map[string]int{"user-1001": 1001, "user-01": 0, "user-": 0, "default": 0, "user-0": 0, "user-12x": 0} {
		if got, ok := ProjectOfUID(s); got != want && ok || ok != (want != 0) {
			t.Errorf("ProjectOfUID(%q) = %d, %v", s, got, ok)
		}
	}
}

func TestGrantProfiles(t *testing.T) {
	placement := incus.Profile{Name: "box-net", Config: nil, Devices: map[string]map[string]string{
		"eth0": {"type": "nic", "network": "boxnet", "security.port_isolation": "true"},
		"root": {"type": "disk", "path": "/", "pool": "default"}}}
	ps := GrantProfiles(placement)
	if len(ps) != 2 || ps[0].Name != "default" || len(ps[0].Devices) != 0 || ps[1].Name != "box-net" {
		t.Fatalf("profiles %+v", ps)
	}
	if d := ProfileDrift(ps[1], &placement); d != "" {
		t.Errorf("the copy drifts from its source: %s", d)
	}
	ps[1].Devices["eth0"]["security.port_isolation"] = "false"
	if placement.Devices["eth0"]["security.port_isolation"] != "true" {
		t.Error("the copy shares the source's maps")
	}
	if d := ProfileDrift(GrantProfiles(placement)[1], &ps[1]); !strings.Contains(d, "eth0") {
		t.Errorf("port isolation stripped: drift %q", d)
	}
	if d := ProfileDrift(ps[0], nil); !strings.Contains(d, "missing") {
		t.Errorf("missing profile: %q", d)
	}
	if PlacementBridge(placement) != "boxnet" || PlacementBridge(incus.Profile{}) != "" {
		t.Error("PlacementBridge")
	}
}

func TestGrantLimits(t *testing.T) {
	for in, ok := range map[string]bool{"instances=5": true, "memory=16GiB": true, "memory=50%": true, "disk=100GiB": true,
		"cpu=4": true, "processes=2000": true, "gpu=1": false, "instances": false, "instances=-1": false, "memory=lots": false, "cpu=4GiB": false} {
		if _, _, err := ParseGrantLimit(in); (err == nil) != ok {
			t.Errorf("ParseGrantLimit(%q): %v", in, err)
		}
	}
	g := Grant{User: "alice", UID: 1001, Bridge: "boxnet", Limits: map[string]string{"instances": "5", "memory": "8GiB"}}
	cfg := g.ProjectConfig()
	if cfg["limits.instances"] != "5" || cfg[GrantLimitsKey] != "instances=5,memory=8GiB" {
		t.Errorf("config %v", cfg)
	}
	if got := RecordedLimits(cfg); len(got) != 2 || got["memory"] != "8GiB" {
		t.Errorf("recorded %v", got)
	}
	cfg["limits.instances"] = "50"
	cfg["limits.cpu"] = "2" // the operator's own
	if d := g.ProjectDrift(cfg); len(d) != 1 || d[0].Key != "limits.instances" {
		t.Errorf("drift %v", d)
	}
}

// Where a granted user could name their port out of the box-to-box drop, grant refuses
// before it asks incusd anything, unless the operator takes the gap.
func TestGrantRefusesThePortNameGap(t *testing.T) {
	testenv.User(t)
	c := incus.New("/nonexistent/unix.socket") // never dialled on the refusal
	h := GrantHost{Client: c, IncusDir: "/var/lib/incus", Placement: "box-net"}
	err := h.Grant(context.Background(), GrantRequest{User: testenv.UserName, PortName: PortNameFact{Gap: true}})
	if !errors.Is(err, ErrPortNameFirewall) { // its hint: cmd/box's TestHints
		t.Fatalf("grant with the gap: %v", err)
	}
	err = h.Grant(context.Background(), GrantRequest{User: testenv.UserName, PortName: PortNameFact{Gap: true, Accepted: true}})
	if errors.Is(err, ErrPortNameFirewall) || err == nil {
		t.Fatalf("grant with the gap accepted: %v, want it past the check (and failing on the missing socket)", err)
	}
	if !PortNameGap(false, false) || PortNameGap(true, false) || PortNameGap(false, true) {
		t.Error("PortNameGap")
	}
}
