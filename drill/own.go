package drill

import (
	"fmt"
	"os"
	"syscall"
)

// inodes is "dev:ino" of each path that exists (not followed through a link).
func inodes(paths []string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		if id := inode(p); id != "" {
			m[p] = id
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func inode(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// OwnFiles judges path probes for a persistent bwrap box, whose own home sits at the
// real home's path: a secret path seen inside is a breach only when it is the host's
// file. A bind mount shows the host file's device and inode inside, so a seen target
// whose "dev:ino" differs from the host's at that path (or that the host lacks) is the
// box's own (a login made inside, a ~/.ssh/known_hosts of its own). An observation whose
// every seen target is the box's own becomes not seen, saying so. It runs outside.
func OwnFiles(p Plan, obs []Observation) []Observation {
	kinds := map[string]Kind{}
	for _, pr := range p.Probes {
		kinds[pr.ID] = pr.Kind
	}
	for i, o := range obs {
		if kinds[o.ID] != KindPath || !o.Seen || len(o.Inodes) == 0 {
			continue
		}
		own := true
		for path, id := range o.Inodes {
			if inode(path) == id {
				own = false // the host's own file, seen inside
			}
		}
		if own {
			obs[i].Seen = false
			obs[i].Detail = "only the box's own files (not the host's): " + o.Detail
		}
	}
	return obs
}
