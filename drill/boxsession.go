package drill

// The second-session row (hostile review, session 13): a persistent bwrap box's home is
// written by the sandbox of a session running in it, and a second session's bwrap makes
// its mount points under $HOME in that same home. box checks the home first
// (PrepareHome: no link on the way to a mount point), but the first session's sandbox
// can swap a directory there for a link between that check and bwrap's mkdir, and bwrap
// then makes the mount point at the far end of the link (through its /oldroot): on the
// host. So a bwrap box runs one session at a time. The drill makes a box of its own in a
// scratch data directory, runs the attacker's session (a loop swapping the mount point's
// parent with a link to a scratch directory outside the box), and starts a second
// session beside it. Seen there: BREACH (and, when the race is won, the directory bwrap
// made outside).

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// BoxSessionRowID is the second-session row's id.
const BoxSessionRowID = "trust:box-second-session"

// boxSessionTries is how many second sessions the row starts while the first runs.
const boxSessionTries = 5

// boxSessionRow runs the attack with the drilled plan's template.
func (b *Bwrap) boxSessionRow(p *bwrap.Plan, nonce string) Result {
	r := Result{ID: BoxSessionRowID, Group: "trust",
		Probe:    "a second session of a bwrap box while the first one's sandbox swaps a mount point's parent for a link out of the box",
		Expected: "the second session is refused; nothing is made outside the box"}
	if p.Isolation.Landlock() {
		r.Status, r.Observed = Skip, "the Landlock mode mounts nothing: a box's home has no mount points"
		return r
	}
	fail := func(format string, a ...any) Result {
		r.Status, r.Observed = Error, fmt.Sprintf(format, a...)
		return r
	}
	scratch, err := scratchDirs("box-drill-session-", "data", "proj", "src", "outside") // linkswap.go
	if err != nil {
		return fail("scratch directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	data, proj, src, outside := filepath.Join(scratch, "data"), filepath.Join(scratch, "proj"), filepath.Join(scratch, "src"), filepath.Join(scratch, "outside")
	// The mount point's parent lies in the box's home: the link swapped in for it leads
	// bwrap's mkdir to outside/m.
	parent := ".box-drill-session-" + nonce
	made := filepath.Join(outside, "m")
	r.Targets = []string{made}
	prof := &profiles.Profile{Name: "box-drill-session", Backend: profiles.BackendBwrap, Network: policy.NetNone, Template: p.Template.Name, Source: "the drill",
		Mounts: []profiles.Mount{{Path: src, Target: "~/" + parent + "/m", Mode: "ro"}}}
	if err := prof.Validate(); err != nil {
		return fail("the box's profile: %v", err)
	}
	store := dirbox.Store{Root: dirbox.Root(data)}
	name := "drill-session"
	if _, _, err := store.Create(dirbox.Stamp{Name: name, Profile: prof, Template: p.Template, Network: string(policy.NetNone),
		Workdir: proj, Created: time.Now().UTC(), Origin: "mint"}, nil); err != nil {
		return fail("making the box: %v", err)
	}
	boxes := func(out, errb *bytes.Buffer) bwrap.Boxes {
		s := *b.Session
		s.Outside.DataHome, s.Yes, s.DryRun, s.Quiet = data, true, false, true
		s.Stdin, s.Stdout, s.Stderr, s.AuditOut, s.StdinTTY = bytes.NewReader(nil), out, errb, errb, nil
		return bwrap.Boxes{Store: store, Session: s, Quiet: true}
	}
	launch := backend.LaunchRequest{Yes: true, AllowRoot: p.AllowRoot}
	// The attacker: swaps ~/PARENT (a directory) for a link to /oldroot/.../outside and
	// back, until STOP appears in the working directory.
	loop := fmt.Sprintf(`d="$HOME/%s"; t=/oldroot%s; mkdir -p "$d"; : > READY
until [ -e STOP ]; do
  if mv -T "$d" "$d.real" 2>/dev/null; then ln -s "$t" "$d"; rm -f "$d"; fi
  mv -T "$d.real" "$d" 2>/dev/null || { [ -d "$d.real" ] && rm -rf "$d" && mv -T "$d.real" "$d"; }
done`, parent, outside)
	var out1, err1 bytes.Buffer
	first := make(chan error, 1)
	go func() { first <- boxes(&out1, &err1).Exec(name, []string{"sh", "-c", loop}, launch) }()
	stopFirst := func() error {
		os.WriteFile(filepath.Join(proj, "STOP"), nil, 0o600)
		return <-first
	}
	if ended, err := awaitReady(filepath.Join(proj, "READY"), first); ended { // linkswap.go
		return fail("the first session ended before its loop started: %v %s", err, finalLine(err1.String()))
	} else if err != nil {
		stopFirst()
		return fail("the first session's loop %v", err)
	}
	started := 0
	var refused *dirbox.SessionBusyError
	var other error
	for range boxSessionTries {
		var out2, err2 bytes.Buffer
		err := boxes(&out2, &err2).Exec(name, []string{"true"}, launch)
		if errors.As(err, &refused) {
			break
		}
		var exit *backend.ExitError
		if err != nil && !errors.As(err, &exit) {
			other = fmt.Errorf("%v %s", err, finalLine(err2.String()))
		}
		started++ // it ran (or its bwrap failed on what the loop did to the home)
		if _, err := os.Lstat(made); err == nil {
			break
		}
	}
	if err := stopFirst(); err != nil {
		var exit *backend.ExitError
		if !errors.As(err, &exit) {
			return fail("the first session: %v %s", err, finalLine(err1.String()))
		}
	}
	_, statErr := os.Lstat(made)
	switch {
	case statErr == nil:
		r.Status, r.Observed = Breach, fmt.Sprintf("a second session started while the first ran, and its bwrap made %s, outside the box, through the link", made)
	case started > 0:
		r.Status, r.Observed = Breach, fmt.Sprintf("%d second session(s) started while the first ran (set up in a home the first rewrites; the race was not won this time)", started)
		if other != nil {
			r.Observed += fmt.Sprintf("; one failed: %v", other)
		}
	case refused != nil:
		r.Status, r.Observed = Pass, "refused: "+refused.Error()
	default:
		return fail("the second session neither ran nor was refused: %v", other)
	}
	return r
}

// finalLine is the last line of a session's stderr: its error, said in the row.
func finalLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
