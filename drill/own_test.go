package drill

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOwnFiles(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host-key")
	os.WriteFile(host, []byte("k"), 0o600)
	boxOwn := filepath.Join(dir, "box-key")
	os.WriteFile(boxOwn, []byte("k"), 0o600)
	p := Plan{Probes: []Probe{{ID: "secret:a", Kind: KindPath}, {ID: "secret:b", Kind: KindPath}, {ID: "secret:c", Kind: KindPath}, {ID: "env:x", Kind: KindEnv}}}
	obs := []Observation{
		// The host's file seen inside (a bind: same dev:ino): still a breach.
		{ID: "secret:a", Seen: true, Detail: "readable", Inodes: map[string]string{host: inode(host)}},
		// At the host path, another file (the box's own home): not the host's.
		{ID: "secret:b", Seen: true, Detail: "readable", Inodes: map[string]string{host: inode(boxOwn)}},
		// A path the host does not have at all: the box's own.
		{ID: "secret:c", Seen: true, Detail: "readable", Inodes: map[string]string{filepath.Join(dir, "nope"): "1:2"}},
		{ID: "env:x", Seen: true},
	}
	got := OwnFiles(p, obs)
	if !got[0].Seen || got[1].Seen || got[2].Seen || !got[3].Seen {
		t.Errorf("seen: %v %v %v %v", got[0].Seen, got[1].Seen, got[2].Seen, got[3].Seen)
	}
	if got[1].Detail != "only the box's own files (not the host's): readable" {
		t.Errorf("detail %q", got[1].Detail)
	}
}
