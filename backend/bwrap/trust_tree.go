package bwrap

// Trust between runs at once on one project tree. The instance directory's rule
// (trust.go) keeps runs of one profile to one reach; runs of other profiles share the
// working directory instead, and what one sandbox writes there for the agent
// (.claude/settings.json hooks, .mcp.json servers, CLAUDE.md) another, wider run reads
// while both run, before any post-run audit has looked. So the tree has a record too,
// beside its lock (outside every sandbox): the run that finds the tree quiet records its
// reach, and a run that joins a busy tree with another reach is refused, whatever its
// profile.

import (
	"bytes"
	"encoding/json"

	"github.com/heavy-duty/box/backend/bwrap/protect"
)

// ProtTreeReach names the tree's record (switched off only in a test build, so the
// drill can show a narrower run of another profile planting what a wider one reads).
const ProtTreeReach = "tree-reach"

// treeReachFile is the tree's record, beside its lock.
func treeReachFile(lock string) string { return lock + ".reach.json" }

// settleTreeReach holds the rule while the run enters the tree (h's gate held): alone,
// it records r; joining, it refuses another reach, or a record it cannot read.
func settleTreeReach(h *protect.Hold, lock, workdir string, r Reach) error {
	if protectionOff(ProtTreeReach) {
		return nil
	}
	path := treeReachFile(lock)
	if h.Alone() {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		data = append(data, '\n')
		// Most runs of a tree have the reach of the last one: the record, outside every
		// sandbox, is rewritten only when it changes (a rename a run saved).
		if old, err := readRegular(path); err == nil && bytes.Equal(old, data) {
			return nil
		}
		return writeHealing(path, data)
	}
	old, err := readReachAt(path)
	if err != nil {
		return &ConcurrentReachError{Dir: workdir, Tree: true, Why: err.Error()}
	}
	if d := append(r.Beyond(old), old.Beyond(r)...); len(d) > 0 {
		return &ConcurrentReachError{Dir: workdir, Tree: true, Beyond: d}
	}
	return nil
}
