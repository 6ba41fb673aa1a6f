package drill

import (
	"strings"
	"testing"
)

// The cgroup probe finds cgroup and cgroup2 mounts, escaped names included, and only
// those.
func TestCgroupMountPoints(t *testing.T) {
	mi := []byte(`24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw
26 24 0:24 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
27 26 0:25 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
28 26 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
29 30 0:26 /box /mnt/my\040cg rw - cgroup2 cgroup2 rw
`)
	got := cgroupMountPoints(mi)
	want := []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/mnt/my cg"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}
