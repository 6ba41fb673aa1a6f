package drill

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// KindWatchHome: the inside puts an inotify watch on the operator's home and ~/.ssh,
// each named with its device and inode ("PATH DEV:INO"), as box sees them outside. A
// watch on the operator's own directory (the same inode) = seen: every name opened,
// created or changed in it, and when, reaches the watcher, though its contents are
// unreadable. Landlock does not govern watches (hostile review, session 13); the bwrap
// mode's home is a tmpfs of its own, another inode.
const KindWatchHome Kind = "watch-home"

// watchHomeProbe is the kernel group's row for it; targets are WatchTargets'.
func watchHomeProbe(targets []string) Probe {
	pr := Probe{ID: "kernel:watch-home", Group: "kernel", Name: "a watch (inotify) on your home and ~/.ssh", Kind: KindWatchHome,
		Targets: targets, Want: Blocked, Expected: "not your directories"}
	if len(targets) == 0 {
		pr.Skip = "no home to watch"
	}
	return pr
}

// WatchTargets are the operator's home and ~/.ssh, each as "PATH DEV:INO" (those that exist).
func WatchTargets(home string) []string {
	var out []string
	for _, p := range []string{home, filepath.Join(home, ".ssh")} {
		var st unix.Stat_t
		if home != "" && unix.Stat(p, &st) == nil {
			out = append(out, fmt.Sprintf("%s %d:%d", p, st.Dev, st.Ino))
		}
	}
	return out
}

// probeWatchHome: seen when a watch is placed on a target that is the operator's inode.
func probeWatchHome(targets []string) (bool, string, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return false, "inotify refused: " + errnoName(err), nil
	}
	defer unix.Close(fd)
	var seen, other []string
	for _, t := range targets {
		i := strings.LastIndexByte(t, ' ')
		if i < 0 {
			return false, "", fmt.Errorf("target %q", t)
		}
		path, id := t[:i], t[i+1:]
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil || fmt.Sprintf("%d:%d", st.Dev, st.Ino) != id {
			other = append(other, path+": not yours (a home of its own)")
			continue
		}
		if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN|unix.IN_CREATE|unix.IN_MODIFY|unix.IN_CLOSE); err != nil {
			other = append(other, path+": watch refused ("+errnoName(err)+")")
			continue
		}
		seen = append(seen, path+": watched")
	}
	if len(seen) > 0 {
		return true, strings.Join(append(seen, other...), "; "), nil
	}
	return false, strings.Join(other, "; "), nil
}
