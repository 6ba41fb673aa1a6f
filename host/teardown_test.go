package host

import (
	"reflect"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

func TestForeignUsers(t *testing.T) {
	boxes := []incus.Instance{{Name: "work"}, {Name: "agent"}}
	usedBy := map[string][]string{
		"profile box-net": {
			"/1.0/instances/work",
			"/1.0/instances/work/snapshots/pristine", // a box's snapshot is the box
			"/1.0/instances/payroll/snapshots/snap1", // named by its instance, not "snap1"
			"/1.0/instances/agent?project=default",
			"/1.0/instances/agent?project=other", // same name, another project: not ours
		},
		"network boxnet": {
			"/1.0/profiles/box-net", // not an instance
			"/1.0/instances/payroll",
			"/1.0/instances/db%2Dx",
		},
	}
	got := ForeignUsers(usedBy, boxes, "")
	want := []string{"payroll (network boxnet)", "db-x (network boxnet)", "payroll (profile box-net)", "other/agent (profile box-net)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ForeignUsers = %q\nwant %q", got, want)
	}
	if got := ForeignUsers(map[string][]string{"profile box-net": {"/1.0/instances/work", "/1.0/instances/agent/snapshots/s"}}, boxes, "default"); len(got) != 0 {
		t.Errorf("boxes alone: %q", got)
	}
}
