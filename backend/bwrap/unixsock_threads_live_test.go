package bwrap_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// floodConnects is the sandbox's part: a listener with a backlog of 0 and one connection
// queued (so every SYN after it is dropped), then N threads each in a blocking connect to
// it; it ends when "stop" appears in the working directory.
const floodConnects = `import socket, threading, time, os, sys
n = int(sys.argv[1])
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
port = l.getsockname()[1]
q = socket.create_connection(("127.0.0.1", port))
def go():
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        pass
for _ in range(n):
    threading.Thread(target=go, daemon=True).start()
while not os.path.exists("stop"):
    time.sleep(0.05)
`

// A sandbox's calls that block in box (box makes every connect of the sandbox, and its
// address-carrying sends, on the sandbox's behalf: unixsock.go) hold no more than
// maxNotifications of box's threads. Before, each blocked call held one: 300 sandbox
// threads in a connect to a full listener gave box 310 threads (measured), counted
// against the operator's own process limit and, past Go's 10,000, the end of box (a
// hostile review). Real box run, tier none, as the unprivileged user in the lab: the
// sandbox's 400 threads are all in connect (read from /proc/TID/syscall, from outside),
// then box's own thread count is read.
func TestUnixMediationThreadsBounded(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "python3") {
		testenv.RequireTool(t, tool)
	}
	const n = 400
	w := newWorld(t)
	l := lab.New(t)
	w.write(filepath.Join(w.proj, "flood.py"), floodConnects)
	os.Remove(filepath.Join(w.proj, "stop"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := l.UserCommand(ctx, w.uid, w.gid, w.box, "run", "-y", "--network", "none", "--", "python3", "flood.py", strconv.Itoa(n))
	cmd.Dir, cmd.Env = w.proj, w.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		os.WriteFile(filepath.Join(w.proj, "stop"), nil, 0o644)
		if err := <-exited; err != nil {
			t.Errorf("box run: %v\n%s", err, out.String())
		}
	}()
	var py, box int
	for py == 0 || box == 0 {
		py = descendantWhere(cmd.Process.Pid, func(argv []string) bool { return len(argv) == 3 && argv[0] == "python3" && argv[1] == "flood.py" })
		box = descendantWhere(cmd.Process.Pid, func(argv []string) bool { return len(argv) > 1 && argv[0] == w.box && argv[1] == "run" })
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("box run ended: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("the sandbox's python never started\n%s", out.String())
		case <-time.After(20 * time.Millisecond): // waiting for the condition above, not a delay
		}
	}
	// Every worker thread is in connect(2) (42 on x86-64, 203 on arm64): blocked in the
	// kernel's connect, or waiting for box to take its notification.
	connects := func() int {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", py))
		c := 0
		for _, task := range tasks {
			sc, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", py, task.Name()))
			if f := strings.Fields(string(sc)); len(f) > 0 && f[0] == connectNr {
				c++
			}
		}
		return c
	}
	for connects() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("only %d of the sandbox's %d threads reached connect\n%s", connects(), n, out.String())
		case <-time.After(20 * time.Millisecond): // waiting for the condition above, not a delay
		}
	}
	// Each connect box made for the sandbox and that waits is a socket in SYN-SENT in the
	// sandbox's namespace (box makes it on the sandbox's own socket). Wait until box has
	// made as many as the bound lets it, then count them and box's threads.
	const bound = 128 // unixsock.go's maxNotifications
	synSent := func() int {
		tcp, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", py))
		c := 0
		for _, line := range strings.Split(string(tcp), "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[3] == "02" {
				c++
			}
		}
		return c
	}
	for synSent() < bound-1 {
		select {
		case <-ctx.Done():
			t.Fatalf("box made only %d of the sandbox's connects\n%s", synSent(), out.String())
		case <-time.After(20 * time.Millisecond): // waiting for the condition above, not a delay
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", box))
	if err != nil {
		t.Fatal(err)
	}
	threads := -1
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	made := synSent()
	t.Logf("box (pid %d): %d threads, %d connects made and waiting, while %d of the sandbox's threads are in connect", box, threads, made, n)
	if made > bound {
		t.Errorf("box made %d of the sandbox's connects at once, past the bound of %d", made, bound)
	}
	if threads < 0 || threads >= n/2 {
		t.Errorf("box runs %d threads while %d of the sandbox's are in connect: a thread of box's for each blocked call", threads, n)
	}
}
