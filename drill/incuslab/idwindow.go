package incuslab

// Each lab's incusd picks its containers' isolated host id ranges from root's entry in
// /etc/subuid and /etc/subgid, from the start, so the first container of every lab on the
// machine had the same host uids (1065536). Labs of parallel tests share one kernel: the
// sibling test's fds in flight on that uid then failed another lab's container start
// (lxc: "Too many references: cannot splice", and box new waited on it for minutes). Each
// lab therefore sees a window of root's range of its own (a private /etc/subuid and
// /etc/subgid, bound in the daemon's mount namespace), held with a lock for its life.
// Disjoint windows are also what a real cluster has: each member is its own host.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// idWindows is how many windows root's range is cut into: more than the labs the test
// packages run at once (each window still holds hundreds of 65536-id ranges).
const idWindows = 32

// minWindow is the smallest window worth handing out: a few containers' ranges.
const minWindow = 8 * 65536

// idWindow is a lab's share of root's subordinate ids, held by lock.
type idWindow struct {
	Start, Size uint64
	lock        *os.File
}

// rootRange reads root's first range in a subordinate id file.
func rootRange(path string) (start, size uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(p) != 3 || (p[0] != "root" && p[0] != "0") {
			continue
		}
		start, err1 := strconv.ParseUint(p[1], 10, 64)
		size, err2 := strconv.ParseUint(p[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("%s: root's entry %q: %w", path, sc.Text(), err)
		}
		return start, size, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, fmt.Errorf("%s: no entry for root", path)
}

// takeIDWindow takes a free window of root's range (the same in /etc/subuid and
// /etc/subgid, which must agree), locking it in lockDir until release.
func takeIDWindow(lockDir, subuid, subgid string) (*idWindow, error) {
	us, un, err := rootRange(subuid)
	if err != nil {
		return nil, err
	}
	gs, gn, err := rootRange(subgid)
	if err != nil {
		return nil, err
	}
	if us != gs || un != gn {
		return nil, fmt.Errorf("root's subordinate uids (%d:%d) and gids (%d:%d) differ: the lab hands out one window of both", us, un, gs, gn)
	}
	size := un / idWindows / 65536 * 65536
	if size < minWindow {
		return nil, fmt.Errorf("root's subordinate id range %d:%d is too small to share among %d labs", us, un, idWindows)
	}
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return nil, err
	}
	for i := range uint64(idWindows) {
		f, err := os.OpenFile(filepath.Join(lockDir, fmt.Sprintf("window-%d.lock", i)), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return nil, err
		}
		return &idWindow{Start: us + i*size, Size: size, lock: f}, nil
	}
	return nil, fmt.Errorf("all %d id windows of the incus labs are taken (%s)", idWindows, lockDir)
}

// entry is the window as a subordinate id file's line for root.
func (w *idWindow) entry() string { return fmt.Sprintf("root:%d:%d\n", w.Start, w.Size) }

func (w *idWindow) release() {
	if w != nil && w.lock != nil {
		w.lock.Close()
	}
}
