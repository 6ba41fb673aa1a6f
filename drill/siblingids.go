package drill

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/heavy-duty/box/backend/incus"
)

// The sibling rows of who a box is to the host kernel. A container box's processes run
// as host uids of its idmap range; when two boxes share a range (Incus's default, no
// security.idmap.isolated), box A's root is box B's root to the host kernel, and what
// the kernel counts per host user (struct user_struct: file descriptors in flight over
// unix sockets, pipe buffer pages; key quotas per kuid) is one budget for both. A uses
// it up and B's processes are refused: here, passing a file descriptor over a unix
// socket (what systemd, journald and D-Bus do all the time) fails with ETOOMANYREFS.

// InflightSubcommand is box's hidden entry point the vm drill pushes into its two boxes
// (the box binary itself, static): "hold" in A, "send" in B.
const InflightSubcommand = "__inflight"

// inflightPath is where the drill puts the probe binary in each box.
const inflightPath = "/root/.box-drill-inflight"

// The most a holder puts in flight: far above any default nofile limit, and a few tens
// of MiB of kernel memory at most.
const inflightCap = 1 << 21

// InflightMain is the probe: "hold [MAX]" puts as many file descriptors in flight over
// unix sockets as the kernel lets this host user, up to MAX (raising its own nofile limit
// to the hard one, as any process may), prints "held N", and keeps them until stdin ends (at most
// two minutes); "send" passes one descriptor over a fresh socket pair and prints
// "sent" (exit 0) or "refused: ERRNO" (exit 1), with its nofile limit.
func InflightMain(args []string, stdin io.Reader, stdout io.Writer) int {
	if len(args) == 0 || len(args) > 2 {
		fmt.Fprintln(stdout, "usage: __inflight hold [MAX]|send")
		return 2
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(stdout, "error: getrlimit:", err)
		return 2
	}
	switch args[0] {
	case "send":
		err := sendOneFD()
		if err != nil {
			fmt.Fprintf(stdout, "refused: %s (nofile %d)\n", errnoName(err), lim.Cur)
			return 1
		}
		fmt.Fprintf(stdout, "sent (nofile %d)\n", lim.Cur)
		return 0
	case "hold":
		lim.Cur = lim.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
		most := inflightCap
		if len(args) == 2 {
			n, err := strconv.Atoi(args[1])
			if err != nil || n <= 0 {
				fmt.Fprintln(stdout, "usage: __inflight hold [MAX]|send")
				return 2
			}
			most = min(n, inflightCap)
		}
		held, stop, err := holdFDs(most)
		if err != nil {
			fmt.Fprintln(stdout, "error:", err)
			return 2
		}
		why := "cap reached"
		if stop != nil {
			why = errnoName(stop)
		}
		fmt.Fprintf(stdout, "held %d (%s)\n", held, why)
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, stdin); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
		}
		return 0
	}
	fmt.Fprintln(stdout, "usage: __inflight hold [MAX]|send")
	return 2
}

// holdFDs sends one descriptor, SCM_MAX_FD times a message, over socket pairs nobody
// reads, until the kernel refuses (the user's count is above this process's nofile
// limit) or inflightCap. The pairs stay open: closing them would free the count.
func holdFDs(most int) (held int, stop error, err error) {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, err
	}
	fds := make([]int, 253) // SCM_MAX_FD
	for i := range fds {
		fds[i] = null
	}
	rights := unix.UnixRights(fds...)
	for held < most {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return held, err, nil // out of descriptors: as far as this process gets
		}
		for held < most {
			err := unix.Sendmsg(pair[0], []byte{0}, rights, nil, unix.MSG_DONTWAIT)
			if errors.Is(err, unix.EAGAIN) {
				break // this pair's buffer is full: the next one
			}
			if err != nil {
				return held, err, nil
			}
			held += len(fds)
		}
	}
	return held, nil, nil
}

func sendOneFD() error {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	return unix.Sendmsg(pair[0], []byte{0}, unix.UnixRights(pair[1]), nil, 0)
}

// inflightVerdict judges the fds-in-flight probe from what A's holder and B's sender
// printed. Seen (a BREACH) when B was refused with ETOOMANYREFS while A held; not seen
// only when B sent although A held more than B's own nofile limit (so a shared count
// would have refused it); anything else is an error naming what was seen.
func inflightVerdict(holdOut, sendOut string, sendCode int) (bool, string, error) {
	detail := "A: " + strings.TrimSpace(holdOut) + "; B: " + strings.TrimSpace(sendOut)
	var held int
	if _, err := fmt.Sscanf(strings.TrimSpace(holdOut), "held %d", &held); err != nil {
		return false, "", fmt.Errorf("box A's holder did not report: %s", detail)
	}
	switch {
	case sendCode == 1 && strings.HasPrefix(sendOut, "refused: ETOOMANYREFS"):
		return true, detail + ": A's descriptors in flight count against B", nil
	case sendCode != 0:
		return false, "", fmt.Errorf("box B's sender failed otherwise: %s", detail)
	}
	_, after, _ := strings.Cut(sendOut, "(nofile ")
	limit, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(after), ")"))
	if err != nil {
		return false, "", fmt.Errorf("box B's sender did not say its nofile limit: %s", detail)
	}
	if held <= limit {
		return false, "", fmt.Errorf("box A held %d, not above B's nofile limit %d: the probe proves nothing", held, limit)
	}
	return false, detail, nil
}

// siblingInflight is the sibling:fds-in-flight row's probe: the box binary is pushed
// into A and B; B passes one (its nofile limit), A holds past that limit, B passes again.
func siblingInflight(ctx context.Context, c *incus.Client, probe []byte, a, b string) (bool, string, error) {
	for _, n := range []string{a, b} {
		if err := c.WriteFile(ctx, n, inflightPath, probe, 0, 0, 0o755); err != nil {
			return false, "", fmt.Errorf("pushing the probe into %s: %w", n, err)
		}
	}
	// B's own limit first: A then holds just past it, so what else runs as A's host user
	// (any container on a shared range) is refused for no longer and no wider than needed.
	code, sendOut, err := execSh(ctx, c, b, inflightPath+" "+InflightSubcommand+" send")
	if err != nil {
		return false, "", err
	}
	_, after, _ := strings.Cut(sendOut, "(nofile ")
	limit, perr := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(after), ")"))
	if code != 0 || perr != nil {
		return false, "", fmt.Errorf("box B cannot pass a descriptor before A holds any: %s", strings.TrimSpace(sendOut))
	}
	stdin, release := io.Pipe()
	defer release.Close()
	outR, outW := io.Pipe()
	holdDone := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, a, incus.Exec{Command: []string{inflightPath, InflightSubcommand, "hold", strconv.Itoa(limit + 2*253)}, Stdin: stdin, Stdout: outW})
		outW.CloseWithError(err)
		holdDone <- err
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		return false, "", fmt.Errorf("box A's holder: %q: %w", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	code, sendOut, err = execSh(ctx, c, b, inflightPath+" "+InflightSubcommand+" send")
	release.Close()
	<-holdDone
	if err != nil {
		return false, "", err
	}
	return inflightVerdict(line, sendOut, code)
}

// siblingHostIDs is the sibling:host-uid row's probe: seen when a host uid is in both
// boxes' maps (Incus's volatile.idmap.current of each, as the box runs now).
func siblingHostIDs(ctx context.Context, c *incus.Client, a, b string) (bool, string, error) {
	var cur [2]string
	for i, n := range []string{a, b} {
		inst, _, err := c.Instance(ctx, n)
		if err != nil {
			return false, "", err
		}
		cur[i] = inst.Config["volatile.idmap.current"]
	}
	return hostIDVerdict(cur[0], cur[1])
}

// hostIDVerdict compares two boxes' volatile.idmap.current: seen when a host uid is in
// both; a map that is not one is an error, never a pass.
func hostIDVerdict(curA, curB string) (bool, string, error) {
	var maps [2][]incus.IDRange
	for i, cur := range []string{curA, curB} {
		m, err := incus.ParseIDMap(cur)
		if err != nil || hostRoot(m) < 0 {
			return false, "", fmt.Errorf("box %c: volatile.idmap.current %q: not an id map with a root", 'A'+i, cur)
		}
		maps[i] = m
	}
	if x, y, ok := incus.UIDOverlap(maps[0], maps[1]); ok {
		h := max(x.Hostid, y.Hostid)
		return true, fmt.Sprintf("host uids %d-%d (A) and %d-%d (B) overlap: host uid %d is A's uid %d and B's uid %d",
			x.Hostid, x.Hostid+x.Maprange-1, y.Hostid, y.Hostid+y.Maprange-1, h, h-x.Hostid+x.Nsid, h-y.Hostid+y.Nsid), nil
	}
	return false, fmt.Sprintf("A's root is host uid %d, B's %d; the ranges are disjoint", hostRoot(maps[0]), hostRoot(maps[1])), nil
}

func hostRoot(m []incus.IDRange) int64 {
	for _, e := range m {
		if e.Isuid && e.Nsid == 0 {
			return e.Hostid
		}
	}
	return -1
}

// readProbeBinary reads the box binary the drill pushes into its boxes.
func readProbeBinary(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no probe binary (VMOptions.ProbeBinary)")
	}
	return os.ReadFile(path)
}

// SiblingIDRows are the rows of who A and B are to the host kernel, run alone after the
// network probes: A's holder would refuse descriptors to every process of its host user.
func SiblingIDRows(ctx context.Context, c *incus.Client, probeBinary, a, b string) []Result {
	ids := vmProbe{id: "sibling:host-uid", group: "siblings", name: "the two boxes' host uid ranges (volatile.idmap.current)",
		targets: []string{a, b}, want: Blocked, expected: "disjoint: no host uid is in both boxes",
		run: func(ctx context.Context) (bool, string, error) { return siblingHostIDs(ctx, c, a, b) }}
	fds := vmProbe{id: "sibling:fds-in-flight", group: "siblings",
		name:    "box → the other box: hold file descriptors in flight over unix sockets until the kernel refuses, then the other box passes one",
		targets: []string{b}, want: Blocked, expected: "the other box's pass works (its own host user, its own count)",
		run: func(ctx context.Context) (bool, string, error) {
			probe, err := readProbeBinary(probeBinary)
			if err != nil {
				return false, "", err
			}
			return siblingInflight(ctx, c, probe, a, b)
		}}
	var rows []Result
	for _, p := range []vmProbe{ids, fds} {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		seen, detail, err := p.run(pctx)
		cancel()
		rows = append(rows, p.judge(seen, detail, err))
	}
	return rows
}
