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
// The same sandbox can hide a path from the second run's scan of the tree (rename it
// away while the scan passes), and the protected set then lacks it altogether: so no
// check made while another sandbox on the tree is alive can be trusted.
//
// A run therefore holds the tree from before its scan until its sandbox has ended: it
// registers in box's data directory (a record held exclusive while it lives, naming the
// run and its tree), and a run about to scan waits (never refuses) while a run on the
// same tree, one inside it or one around it is registered, saying on stderr for which
// run: a run in /proj writes /proj/sub, a run in /proj/sub writes what /proj's run binds
// there. The check and the registration happen under a gate.

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

// liveRun is one run's record while it holds the tree.
type liveRun struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Started string `json:"started"`
	Tree    string `json:"tree"` // absolute, links resolved
}

// overlaps: one tree is the other or holds it.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") || strings.HasPrefix(b, strings.TrimSuffix(a, "/")+"/")
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

// guardLaunch waits until no other run registered in dir holds a tree overlapping
// me.Tree, then registers this run until release.
func guardLaunch(dir string, me liveRun, stderr io.Writer) (release func(), err error) {
	if protectionOff(ProtLaunchGuard) {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("launch guard: %w", err)
	}
	said := map[string]bool{}
	for {
		gate, err := os.OpenFile(dir+".gate", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("launch guard: %w", err)
		}
		if err := syscall.Flock(int(gate.Fd()), syscall.LOCK_EX); err != nil {
			gate.Close()
			return nil, fmt.Errorf("launch guard: %w", err)
		}
		wait, who, err := firstBlocker(dir, me.Tree)
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
			fmt.Fprintf(stderr, "box: waiting for the run %s to end: a sandbox running on this tree could change it under this run's checks and mounts\n", who)
		}
		// Held exclusive by the live run while its sandbox lives.
		syscall.Flock(int(wait.f.Fd()), syscall.LOCK_SH)
		wait.f.Close()
	}
}

// blocker is a live run's record, open, that this launch waits for.
type blocker struct{ f *os.File }

func (b *blocker) Name() string { return b.f.Name() }

// firstBlocker reads the live runs' records (gate held): a record no one holds is a
// run that ended (removed); the first live run on a tree overlapping tree is returned,
// open. A record that does not read is an error, never skipped.
func firstBlocker(dir, tree string) (*blocker, string, error) {
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
		if !filepath.IsAbs(r.Tree) {
			f.Close()
			return nil, "", &LaunchWaitError{path, fmt.Errorf("no tree named (%q)", r.Tree)}
		}
		if !overlaps(r.Tree, tree) {
			f.Close()
			continue
		}
		where := "in this directory"
		if r.Tree != tree {
			where = "in " + termtext.Escape(r.Tree, false)
		}
		return &blocker{f: f}, fmt.Sprintf("of pid %d (%s, since %s) %s", r.PID, termtext.Escape(r.Command, false), termtext.Escape(r.Started, false), where), nil
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

// guardTree takes the hold on the tree r runs in (the working directory, or a
// persistent box's), in the data directory that holds the trees' locks.
func (s *Session) guardTree(r Request) (func(), error) {
	wd, err := os.Getwd()
	if r.Persistent != nil {
		wd, err = r.Persistent.Workdir, nil
	}
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err == nil {
		wd, err = filepath.Abs(wd)
	}
	if err != nil {
		return nil, &GatherError{fmt.Errorf("working directory: %w", err)}
	}
	dir := LiveRunsDir(s.Outside.DataHome)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		// The first thing a run writes: a HOME of / or not the user's own (a container,
		// a CI job) is said here as the audit would say it, with its hint.
		return nil, &DataDirError{Dir: s.Outside.DataHome, Err: err}
	}
	return guardLaunch(dir, liveRun{PID: os.Getpid(), Command: commandText(r.Command), Tree: wd}, s.Stderr)
}

// LiveRunsDir holds the records of the runs whose sandboxes are alive (outside every
// sandbox: the data directory is hidden in each).
func LiveRunsDir(dataHome string) string { return filepath.Join(dataHome, "box", "live") }
