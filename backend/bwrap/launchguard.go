package bwrap

// The launch guard (hostile review, session 13). bwrap makes and binds its mount points
// by path, following links, and box run's protected set is bound at its own paths
// inside the working directory, which another run's sandbox on the same tree writes
// while it runs. That sandbox can swap a directory on the way to a mount point (a nested
// repository's work tree, a directory it made) for a link, through bwrap's /oldroot, in
// a loop: box's checks see the directory, the second run's bwrap a moment later the
// link. The read-only bind then lands outside the sandbox's view (the nested
// repository stays writable inside, a redacted git config shows its credential), and a
// mount point that does not exist at the link's far end is made there, on the host.
//
// A mount point is renamed or removed by no one in a mount namespace where it is a
// mount point (EBUSY). So a run whose sandbox is alive on the tree registers, beside
// the tree's lock, the mount points its sandbox has there and the roots it can write;
// a run about to launch waits (never refuses) for every live run whose sandbox could
// rename a directory on the way to one of its own mount points (one not mounted in that
// sandbox, between a root it writes and the mount point), and says on stderr for which.
// Runs whose protected sets match, the usual case of parallel tool calls, launch at
// once. Registration happens under a gate with the check, so a run waits only for runs
// that registered before it: no two wait for each other.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/internal/shellquote"
	"github.com/heavy-duty/box/internal/termtext"
)

// ProtLaunchGuard names the launch guard (switched off only in a test build, so the
// drill can show a second run's bwrap following a link the first run's sandbox swaps in).
const ProtLaunchGuard = "launch-guard"

// liveRun is one run's record while its sandbox is alive.
type liveRun struct {
	PID     int      `json:"pid"`
	Command string   `json:"command"`
	Started string   `json:"started"`
	Mounts  []string `json:"mounts"` // its sandbox's mount points (none can be renamed there)
	Roots   []string `json:"roots"`  // what its sandbox can write
}

// mountsIn are the plan's bwrap mount points that may lie in a tree a sandbox writes.
func (p *Plan) mountsIn(skipped []string) []string {
	skip := map[string]bool{}
	for _, s := range skipped {
		skip[s] = true
	}
	out := []string{p.Spec.Workdir}
	for _, m := range p.Spec.Mounts {
		out = append(out, m.Dst)
	}
	out = append(out, p.Spec.GitBinds...)
	out = append(out, p.Spec.Pins...)
	for _, r := range p.Spec.ReadOnly {
		if !skip[r] {
			out = append(out, r)
		}
	}
	for _, r := range p.Spec.Redacted {
		out = append(out, r.Path)
	}
	return out
}

// writableRoots are the places the plan's sandbox can write that another run may mount in.
func (p *Plan) writableRoots() []string {
	out := []string{p.Spec.Workdir}
	for _, m := range p.Spec.Mounts {
		if m.RW {
			out = append(out, m.Dst)
		}
	}
	return append(out, p.Spec.GitBinds...)
}

// blocks reports the first of mounts that r's sandbox could reach by renaming a
// directory (or the mount point itself) it writes and has no mount on: "" when none.
func (r liveRun) blocks(mounts []string) string {
	has := map[string]bool{}
	for _, m := range r.Mounts {
		has[m] = true
	}
	for _, m := range mounts {
		for _, root := range r.Roots {
			if !within(m, root) {
				continue
			}
			for c := m; c != root && c != "/" && c != "."; c = filepath.Dir(c) {
				if !has[c] {
					return m
				}
			}
		}
	}
	return ""
}

// commandText is argv as a shell would read it, shortened, for the waiting run's message
// (escaped there: it comes from another run's record).
func commandText(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellquote.Quote(a)
	}
	s := strings.Join(q, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// LaunchWaitError: the wait for another run could not be kept (its record unreadable).
type LaunchWaitError struct {
	Record string
	Err    error
}

func (e *LaunchWaitError) Error() string {
	return fmt.Sprintf("launch guard: the record of a run on this tree (%s): %v", e.Record, e.Err)
}

// guardLaunch waits until no live run on the tree of lock could swap a link into the
// way of mounts, then registers this run (mounts, roots) until release.
func guardLaunch(lock string, me liveRun, stderr io.Writer) (release func(), err error) {
	if lock == "" || protectionOff(ProtLaunchGuard) {
		return func() {}, nil
	}
	dir := lock + ".live"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("launch guard: %w", err)
	}
	said := map[string]bool{}
	for {
		gate, err := os.OpenFile(lock+".live.gate", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("launch guard: %w", err)
		}
		if err := syscall.Flock(int(gate.Fd()), syscall.LOCK_EX); err != nil {
			gate.Close()
			return nil, fmt.Errorf("launch guard: %w", err)
		}
		wait, who, err := firstBlocker(dir, me.Mounts)
		if err != nil {
			gate.Close()
			return nil, err
		}
		if wait == nil {
			release, err := register(dir, me)
			gate.Close()
			return release, err
		}
		gate.Close()
		if !said[wait.Name()] {
			said[wait.Name()] = true
			fmt.Fprintf(stderr, "box: waiting for the run %s on this directory to end: its sandbox can rename a directory on the way to %s, where this run's bwrap mounts\n", who, wait.mount)
		}
		// Held exclusive by the live run while its sandbox lives.
		syscall.Flock(int(wait.f.Fd()), syscall.LOCK_SH)
		wait.f.Close()
	}
}

// blocker is a live run's record, open, that this launch waits for.
type blocker struct {
	f     *os.File
	mount string
}

func (b *blocker) Name() string { return b.f.Name() }

// firstBlocker reads the live runs' records (gate held): a record no one holds is a
// run that ended (removed); the first live run that blocks mounts is returned, open.
func firstBlocker(dir string, mounts []string) (*blocker, string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("launch guard: %w", err)
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, "", &LaunchWaitError{path, err}
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
			os.Remove(path) // its run has ended
			f.Close()
			continue
		}
		var r liveRun
		if err := json.NewDecoder(io.LimitReader(f, 16<<20)).Decode(&r); err != nil {
			f.Close()
			return nil, "", &LaunchWaitError{path, err}
		}
		if m := r.blocks(mounts); m != "" {
			return &blocker{f: f, mount: m}, fmt.Sprintf("of pid %d (%s, since %s)", r.PID, termtext.Escape(r.Command, false), termtext.Escape(r.Started, false)), nil
		}
		f.Close()
	}
	return nil, "", nil
}

// register writes this run's record and holds it exclusive until release.
func register(dir string, me liveRun) (func(), error) {
	id := make([]byte, 6)
	rand.Read(id)
	path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", me.PID, hex.EncodeToString(id)))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launch guard: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("launch guard: %w", err)
	}
	me.Started = time.Now().UTC().Format(time.RFC3339)
	if err := json.NewEncoder(f).Encode(me); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("launch guard: %w", err)
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}
