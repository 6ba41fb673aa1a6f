package drill

// The link-swap row (hostile review, session 13): box run binds the protected set at its
// own paths inside the working directory, and bwrap makes and binds those mount points
// by path, following links. Another run's sandbox on the same tree writes that
// directory while it runs: it swaps a nested repository's work tree (never pinned) for
// a link to the working directory through bwrap's /oldroot, in a loop, and a second
// run's bwrap binds sub/.git read-only at the link's far end, leaving the nested
// repository writable in the second sandbox (or its scan misses the repository while
// the link is in place). A run waits while another run's sandbox is alive on its tree
// (launchguard.go). The drill makes a
// scratch project with a nested repository, runs the attacker's loop in a first run and
// starts a second beside it: PASS when the second waits for the first and then cannot
// write the hook; BREACH when it launched while the loop ran (and, when the race is won,
// wrote the hook).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// LinkSwapRowID is the link-swap row's id.
const LinkSwapRowID = "trust:concurrent-link-swap"

// lockedBuf is a buffer a run writes while the drill reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// linkSwapRow runs the attack with the drilled plan's template.
func (b *Bwrap) linkSwapRow(p *bwrap.Plan) Result {
	r := Result{ID: LinkSwapRowID, Group: "trust",
		Probe:    "a second run on a tree while the first one's sandbox swaps a nested repository's work tree for a link through bwrap's /oldroot",
		Expected: "the second run waits for the first; its nested repository stays read-only"}
	if p.Isolation.Landlock() {
		r.Status, r.Observed = Skip, "the Landlock mode mounts nothing: no mount point to divert"
		return r
	}
	fail := func(format string, a ...any) Result {
		r.Status, r.Observed = Error, fmt.Sprintf(format, a...)
		return r
	}
	// The user's nested repository: a git directory box recognises (HEAD, objects, refs).
	scratch, err := scratchDirs("box-drill-linkswap-", "data", "home", "instance", "proj/.git", "proj/sub/.git/objects", "proj/sub/.git/refs", "proj/sub/.git/hooks")
	if err != nil {
		return fail("scratch directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	data, home, inst, proj := filepath.Join(scratch, "data"), filepath.Join(scratch, "home"), filepath.Join(scratch, "instance"), filepath.Join(scratch, "proj")
	if err := os.WriteFile(filepath.Join(proj, "sub/.git/HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		return fail("scratch directory: %v", err)
	}
	hook := filepath.Join(proj, "sub/.git/hooks/post-checkout")
	r.Targets = []string{hook}
	prof := &profiles.Profile{Name: "box-drill-linkswap", Backend: profiles.BackendBwrap, Network: policy.NetNone, Template: p.Template.Name, Source: "the drill"}
	run := func(script string, out, errb *lockedBuf) (int, error) {
		s := *b.Session
		s.Outside.DataHome, s.Yes, s.DryRun, s.Quiet = data, true, false, true
		s.Stdin, s.Stdout, s.Stderr, s.AuditOut, s.StdinTTY = bytes.NewReader(nil), out, errb, errb, nil
		ran, err := s.Run(bwrap.Request{Profile: prof, Template: p.Template, Network: string(policy.NetNone), AllowRoot: p.AllowRoot,
			Command:    []string{"sh", "-c", script},
			Persistent: &bwrap.Persistent{Name: "drill-linkswap", Home: home, Instance: inst, Workdir: proj}})
		return ran.Code, err
	}
	// The attacker: swaps sub (a directory) for a link to /oldroot/<proj> and back until
	// STOP appears; below the link every path exists (proj's own .git), so the second
	// run's bwrap never fails, it binds at the far end.
	loop := fmt.Sprintf(`t=/oldroot%s; : > READY
until [ -e STOP ]; do
  if mv -T sub sub.real 2>/dev/null; then ln -s "$t" sub; rm -f sub; fi
  mv -T sub.real sub 2>/dev/null || { [ -d sub.real ] && rm -f sub && mv -T sub.real sub; }
done`, proj)
	var out1, err1 lockedBuf
	first := make(chan error, 1)
	go func() {
		_, err := run(loop, &out1, &err1)
		first <- err
	}()
	stopFirst := func() error {
		os.WriteFile(filepath.Join(proj, "STOP"), nil, 0o600)
		return <-first
	}
	if ended, err := awaitReady(filepath.Join(proj, "READY"), first); ended {
		return fail("the first run ended before its loop started: %v %s", err, finalLine(err1.String()))
	} else if err != nil {
		stopFirst()
		return fail("the first run's loop %v", err)
	}
	try := `i=0; while [ $i -lt 300 ]; do i=$((i+1)); for d in sub sub.real; do
  if [ -d $d/.git/hooks ] && [ ! -L $d ] && (echo 'touch /tmp/box-drill-pwned' > $d/.git/hooks/post-checkout) 2>/dev/null; then echo WROTE; exit 0; fi
done; done; echo "no write"`
	var out2, err2 lockedBuf
	second := make(chan error, 1)
	go func() {
		_, err := run(try, &out2, &err2)
		second <- err
	}()
	waited, ended := false, false
	var secondErr error
	for deadline := time.Now().Add(2 * time.Minute); !waited && !ended; {
		select {
		case secondErr = <-second:
			ended = true
		case <-time.After(20 * time.Millisecond):
			waited = strings.Contains(err2.String(), "box: waiting for the run")
		}
		if time.Now().After(deadline) {
			break
		}
	}
	if err := stopFirst(); err != nil {
		return fail("the first run: %v %s", err, finalLine(err1.String()))
	}
	if !ended {
		secondErr = <-second
	}
	wrote := strings.Contains(out2.String(), "WROTE")
	switch {
	case wrote && !waited:
		r.Status, r.Observed = Breach, "the second run launched while the first one's sandbox swapped sub for a link, and its sandbox wrote "+hook+": its read-only bind landed at the link's far end"
	case wrote:
		r.Status, r.Observed = Breach, "the second run waited, yet its sandbox wrote "+hook
	case !waited && ended:
		r.Status, r.Observed = Breach, "the second run launched while the first one's sandbox swapped sub for a link (its bind was not diverted this time)"
	case waited && strings.Contains(out2.String(), "no write"):
		r.Status, r.Observed = Pass, "the second run waited, then its nested repository was read-only"
		for _, l := range strings.Split(err2.String(), "\n") {
			if strings.HasPrefix(l, "box: waiting for the run") {
				r.Observed += " (" + strings.TrimPrefix(l, "box: ") + ")"
				break
			}
		}
	default:
		return fail("the second run neither wrote nor was kept read-only: %v %s %s", secondErr, strings.TrimSpace(out2.String()), finalLine(err2.String()))
	}
	return r
}

// scratchDirs makes a scratch directory (links resolved) holding dirs, for a row's runs
// of its own; the caller removes it.
func scratchDirs(prefix string, dirs ...string) (string, error) {
	made, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	scratch, err := filepath.EvalSymlinks(made)
	if err != nil {
		os.RemoveAll(made)
		return "", err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(scratch, d), 0o700); err != nil {
			os.RemoveAll(scratch)
			return "", err
		}
	}
	return scratch, nil
}

// awaitReady waits (a minute at most) for ready, which an attacker's loop makes when it
// starts, while its run goes on: ended when the run ended first (with its error).
func awaitReady(ready string, first <-chan error) (ended bool, err error) {
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(ready); err == nil {
			return false, nil
		}
		select {
		case err := <-first:
			return true, err
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("did not start within a minute")
		}
	}
}
