package bwrap

// The isolation a launch gets: bwrap (namespaces; the default), landlock (what an
// unprivileged process holds on its own where user namespaces cannot be had; named by
// --isolation or the profile's isolation key), or auto (the profile's or the flag's
// standing opt-in: bwrap where it can start, the Landlock mode where box diagnosed that
// it cannot). Whatever the mode cannot give is refused by name; what does not hold is
// said at every launch in it.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/ttyfilter"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/sys/unix"
)

// Isolation is how a launch is sandboxed.
type Isolation string

const (
	IsolationBwrap    Isolation = profiles.IsolationBwrap
	IsolationLandlock Isolation = profiles.IsolationLandlock
	// IsolationAuto is the opt-in: bwrap, else (diagnosed before launch) the Landlock mode.
	IsolationAuto Isolation = profiles.IsolationAuto
)

// IsolationPlan is the plan's mode and what the Landlock mode needs of the request.
type IsolationPlan struct {
	Mode Isolation
	// FellBack: the mode was auto and bwrap could not start; Why is the diagnosis.
	FellBack bool
	Why      error
	// binds are box's own read-only binds (the drill's probe runner): in the Landlock
	// mode their sources are readable in place and the command names the source.
	binds      []Mount
	persistent bool
	chosen     bool // chooseIsolation ran and succeeded: Start keeps its choice
}

// Landlock reports whether the launch runs in the Landlock mode.
func (i IsolationPlan) Landlock() bool { return i.Mode == IsolationLandlock }

// IsolationError: the Landlock mode cannot give what the plan asks for; What names it.
type IsolationError struct{ What, Why string }

func (e *IsolationError) Error() string {
	return fmt.Sprintf("the Landlock mode (--isolation landlock) cannot give %s: %s", e.What, e.Why)
}

// resolveIsolation sets p's mode from the request (the flag, else the profile's key) and
// refuses, by name, what the Landlock mode cannot give when it is named.
func (p *Plan) resolveIsolation(r Request) error {
	mode := Isolation(r.Isolation)
	if mode == "" && r.Profile != nil {
		mode = Isolation(r.Profile.Isolation)
	}
	if mode == "" {
		mode = IsolationBwrap
	}
	if err := profiles.ValidIsolation(string(mode)); err != nil {
		return err
	}
	p.Isolation = IsolationPlan{Mode: mode, binds: r.Binds, persistent: r.Persistent != nil}
	if mode == IsolationLandlock {
		if err := p.landlockRefusals(r.Profile); err != nil {
			return err
		}
		p.Vars = p.landlockVars() // the environment's audit shows what enters
	}
	return nil
}

// ProtLandlockKeyring, in a test build (BOX_UNSAFE_OFF=landlock-keyring), lets the
// Landlock mode take a profile's syscalls = ["keyring"], which it refuses: with no user
// namespace the user and persistent keyrings keyctl reaches are the operator's.
const ProtLandlockKeyring = "landlock-keyring"

// landlockRefusals: each setting the Landlock mode cannot give is an error, never dropped.
func (p *Plan) landlockRefusals(prof *profiles.Profile) error {
	if t := p.Spec.Network; !t.Offline() { // no namespace: only a sandbox with no network
		return &LandlockTierError{t}
	}
	if p.Isolation.persistent {
		return &IsolationError{"a bwrap box", "its own home at your home's path needs a mount namespace; use box run"}
	}
	if prof != nil && len(prof.Mounts) > 0 {
		return &IsolationError{"the profile's mounts", "a bind needs a mount namespace"}
	}
	if p.Spec.NixStore != "" {
		return &IsolationError{`nix = "store"`, "a store layered over /nix/store needs a mount namespace"}
	}
	if p.Spec.NixDaemon {
		return &IsolationError{`nix = "daemon"`, "its socket is a bind"}
	}
	if p.Spec.SSHDir != "" {
		return &IsolationError{"ssh (box's ssh-agent filter)", "its socket is a bind"}
	}
	if slices.Contains(p.Policy.SyscallsAllowed, "keyring") && !protectionOff(ProtLandlockKeyring) {
		return &IsolationError{`syscalls = ["keyring"]`, "without a user namespace the user keyring and the persistent keyring keyctl reaches are your own (Kerberos KEYRING:persistent caches, tokens)"}
	}
	if err := p.landlockGitCreds(); err != nil && !protectionOff(ProtGitCreds) { // gitcreds.go
		return err
	}
	if abi := LandlockABI(); abi < landlockModeABI {
		return &LandlockABIError{Have: abi, Need: landlockModeABI}
	}
	return nil
}

// NotHeld is what the plan's mode does not hold ("" for bwrap), each with why.
func (p *Plan) NotHeld() []string {
	if !p.Isolation.Landlock() && p.Isolation.Mode != IsolationAuto {
		return nil
	}
	out := append([]string{}, LandlockNotHeld...)
	out = append(out, "the protected set inside the working directory ("+strings.Join(protectedExamples(p), ", ")+"): writable during the run; the post-run audit still moves aside what executes")
	if !p.LandlockSockets().Mediate {
		out = append(out, landlockNotHeldSockets+" ("+p.LandlockSockets().Unmediated+")")
	}
	if LandlockABI() < landlockScopeABI {
		out = append(out, landlockNotHeldABI)
	}
	return out
}

// LandlockSockets is the unix-socket mediation in the Landlock mode: the bwrap mode's
// plan, with the host's network namespace shared (abstract sockets bound outside the
// sandbox refused, as Landlock's scope does: box connects on the sandbox's behalf, from
// outside its domain) and no bwrap to be setuid.
func (p *Plan) LandlockSockets() UnixSockets {
	u := p.Spec.UnixSockets
	u.HostNet, u.ScopeAbstract = true, true
	if !u.Mediate {
		if err := UnixNotifySupport(); err == nil {
			u.Mediate, u.Unmediated = true, ""
		} else if u.Unmediated == "" {
			u.Unmediated = err.Error()
		}
	}
	return u
}

// protectedExamples are a few of the protected set's entries, for the NOT HELD line.
func protectedExamples(p *Plan) []string {
	var ex []string
	for _, ro := range p.Spec.ReadOnly {
		if rel, err := filepath.Rel(p.Spec.Workdir, ro); err == nil && !strings.HasPrefix(rel, "..") {
			ex = append(ex, rel)
		}
		if len(ex) == 3 {
			return append(ex, "...")
		}
	}
	if len(ex) == 0 {
		return []string{".git/hooks", ".envrc", "..."}
	}
	return ex
}

// IsolationLines are what a launch (and a dry run) says of its mode: the mode, then one
// NOT HELD line per item.
func (p *Plan) IsolationLines() []string {
	switch p.Isolation.Mode {
	case IsolationBwrap, "":
		return []string{"isolation: bwrap"}
	case IsolationAuto:
		if !p.Isolation.FellBack {
			return []string{"isolation: auto (bwrap where it starts; the Landlock mode where it cannot, which does not hold:)"}
		}
	}
	out := []string{"isolation: landlock (no namespaces: Landlock file and TCP rules, a socket filter, box's syscall filter, rlimits; see docs/bwrap.md)"}
	for _, n := range p.NotHeld() {
		out = append(out, "NOT HELD: "+n)
	}
	return out
}

// lookBwrap is bwrap's path; the Landlock mode needs none.
func (p *Plan) lookBwrap() (string, error) {
	bin, err := LookBwrap()
	if err != nil && p.Isolation.Landlock() {
		return "", nil
	}
	return bin, err
}

// chooseIsolation is Start's first step: bwrap where it can start; under auto, a
// diagnosed failure falls back to the Landlock mode, saying why. In the Landlock mode it
// checks the kernel and says what does not hold. An error is a refusal (ExitStart).
func (p *Plan) chooseIsolation(bin string, stderr io.Writer) error {
	if p.Isolation.chosen {
		return nil
	}
	if !p.Isolation.Landlock() {
		// The facts are read once, before anything of the launch exists.
		facts := readUsernsSysctls()
		p.usernsKey = usernsKey(bin, facts)
		uerr := usernsBefore(bin, facts) // a launch that cannot start (userns_read.go)
		if uerr == nil && p.Isolation.Mode == IsolationAuto {
			// The cheap facts miss what only a trial shows (AppArmor's restriction, a
			// profile confining bwrap's children): under auto the trial runs first,
			// once per set of facts, so bwrap never fails after the session began.
			uerr = usernsTrial(bin, p.usernsKey)
		}
		if uerr == nil {
			return CheckHome(p.Spec.Home) // args.go: the Landlock mode never mounts one
		}
		if p.Isolation.Mode != IsolationAuto {
			return uerr
		}
		if !autoFallsBack(uerr) {
			return errors.Join(uerr, errors.New(`isolation "auto" does not fall back to the weaker Landlock mode on a cause box does not recognise; name it (--isolation landlock) to run in it`))
		}
		if rerr := p.landlockRefusals(p.Profile); rerr != nil {
			return errors.Join(uerr, fmt.Errorf("isolation = \"auto\" would fall back, but %w", rerr))
		}
		fmt.Fprintf(stderr, "box: warning: bwrap cannot start here (%v); isolation auto: running in the Landlock mode\n", uerr)
		p.Isolation.Mode, p.Isolation.FellBack, p.Isolation.Why = IsolationLandlock, true, uerr
	}
	if err := p.LandlockPlan().Check(LandlockABI()); err != nil {
		return err
	}
	for _, l := range p.IsolationLines() {
		fmt.Fprintf(stderr, "box: %s\n", l)
	}
	p.Isolation.chosen = true
	return nil
}

// ChooseIsolation is Start's choice of mode made ahead of it, for the drill, which must
// know before it plants whether isolation auto falls back to the Landlock mode (and so
// refuses the fixture's git-config credential). Start keeps the choice.
func (p *Plan) ChooseIsolation(stderr io.Writer) error {
	bin, err := p.lookBwrap()
	if err != nil {
		return err
	}
	return p.chooseIsolation(bin, stderr)
}

// autoFallsBack: auto runs in the Landlock mode only for a diagnosed cause that user
// namespaces cannot be had here (disabled, refused by seccomp, AppArmor's restriction or
// a profile confining bwrap); an unrecognised failure fails closed.
func autoFallsBack(err error) bool {
	var ue *UsernsError
	return errors.As(err, &ue) && ue.Cause != UsernsUnknown && ue.Cause != UsernsOK
}

// LandlockPlan is the Landlock mode's plan for p: the system read-only, the working
// directory, the agent's state directory, the mode's home and the git directories commits
// need read-write (never the instance directory's root: landlock_home.go); the
// credential files, tools and box's own binds readable in place.
func (p *Plan) LandlockPlan() LandlockPlan {
	lp := LandlockPlan{
		Tier: p.Spec.Network, Devices: DefaultLandlockDevices, Seccomp: p.Spec.Seccomp,
		Sockets:   p.LandlockSockets(),
		ReadOnly:  append([]string{}, DefaultLandlockReadOnly...),
		ReadWrite: append(append([]string{p.Spec.Workdir}, p.landlockGrants()...), p.Spec.GitBinds...), // landlock_home.go
	}
	lp.ReadOnly = append(lp.ReadOnly, p.Spec.AuthFiles...)
	for _, t := range p.Spec.Tools {
		lp.ReadOnly = append(lp.ReadOnly, t.Path)
	}
	for _, b := range p.Isolation.binds {
		lp.ReadOnly = append(lp.ReadOnly, b.Src)
	}
	if p.Spec.Limits.Pids > 0 {
		lp.Nproc = uint64(p.Spec.Limits.Pids)
	}
	if p.Spec.Limits.Memory > 0 {
		lp.AddrSpace = uint64(p.Spec.Limits.Memory)
	}
	return lp
}

// landlockCommand is the command with box's own binds named by their sources.
func (p *Plan) landlockCommand() []string {
	argv := append([]string{}, p.Spec.Command...)
	for _, b := range p.Isolation.binds {
		if len(argv) > 0 && argv[0] == b.Dst {
			argv[0] = b.Src
		}
	}
	return argv
}

// landlockVars are the audited variables with the sandbox's home where the mode puts
// it: the mode's home in the instance directory (its StateDir the agent's), TMPDIR in it, and PATH the
// system's with the tools' directories.
func (p *Plan) landlockVars() []envaudit.Var {
	vars := make([]envaudit.Var, 0, len(p.Vars)+1)
	home := p.landlockHome() // landlock_home.go
	path := []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}
	for _, t := range p.Spec.Tools {
		if d := filepath.Dir(t.Path); !slices.Contains(path, d) {
			path = append(path, d)
		}
	}
	for _, v := range p.Vars {
		switch {
		case v.Origin != "box":
		case v.Name == "PATH":
			v.Value = strings.Join(path, ":")
		case v.Name == "BOX_SANDBOX":
			v.Value = "landlock"
		case v.Value == p.Spec.Home || strings.HasPrefix(v.Value, p.Spec.Home+"/"):
			v.Value = p.landlockHomeVar(v.Value)
		}
		if v.Name != "TMPDIR" {
			vars = append(vars, v)
		}
	}
	vars = append(vars, envaudit.Var{Name: "TMPDIR", Value: filepath.Join(home, "tmp"), Origin: "box"})
	slices.SortStableFunc(vars, func(a, b envaudit.Var) int { return strings.Compare(a.Name, b.Name) })
	return vars
}

// startLandlock is Start's launch in the Landlock mode, after the session's trust record,
// instance directory and git identity: the command under the mode's rules. The post-run
// audit around it is the session's, as for bwrap.
func (p *Plan) startLandlock(stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	lp := p.LandlockPlan()
	if err := p.prepareLandlockHome(); err != nil { // landlock_home.go: HOME and TMPDIR, never the instance root
		return 1, err
	}
	fds, done, err := stdioFds(stdin, stdout, stderr)
	if err != nil {
		return 1, err
	}
	// On a terminal, where box's group is in front, the command shares that group:
	// Ctrl-C reaches it from the terminal, and box passes a TERM or HUP sent to it on to
	// the command. Without one (CI: stdin /dev/null, stdout a pipe; box in the
	// background) a signal comes to box alone, as a runner cancelling the job sends it:
	// the command gets a group of its own and box passes every ending signal on to that
	// group, so a shell's children end with it (field review, session 13: a cancelled
	// job ran to its end and box exited 0).
	// In the background on a terminal (box run ... &) the command shares box's group
	// too: job control then stops and continues them together. With a group of its
	// own there, a command reading the terminal stopped (SIGTTIN) and stayed stopped
	// after fg, which continued box's group only and gave the terminal to it: the
	// shell was stuck, Ctrl-C reached box alone (field review, session 16,
	// TestLandlockBackgroundThenFg).
	lp.OwnGroup = !OnTerminal()
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	pid := make(chan int, 1)
	lp.OnStart = func(n int) { pid <- n }
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		n, ok := <-pid
		if !ok {
			return
		}
		if !lp.OwnGroup {
			go continueInFront(ended, n)
		}
		for s := range sig {
			switch {
			case lp.OwnGroup:
				syscall.Kill(-n, s.(syscall.Signal))
				syscall.Kill(-n, syscall.SIGCONT) // a stopped job holds the signal pending
			case s == syscall.SIGTERM || s == syscall.SIGHUP:
				syscall.Kill(n, s.(syscall.Signal))
			}
		}
	}()
	if p.Isolation.FellBack { // the audit printed bwrap's values: say what changes
		p.Vars = p.landlockVars()
		for _, v := range p.Vars {
			if v.Origin == "box" && (v.Name == "HOME" || v.Name == "TMPDIR" || v.Name == "PATH") {
				fmt.Fprintf(stderr, "box: isolation auto: %s=%s\n", v.Name, v.Value)
			}
		}
	}
	// The command shares box's terminal: what it leaves changed there (echo off, output
	// stopped by tcflow, the line discipline) is put back, as after a bwrap run.
	terms := saveTerminals(fds)
	code, err := LandlockRun(lp, p.landlockCommand(), envaudit.Environ(p.Vars), p.Spec.Workdir, fds)
	terms.restore()
	resetScreen(fds)
	done()
	select {
	case <-pid:
	default:
	}
	close(pid)
	return code, err
}

// resetScreen puts back, on the terminal among the command's stdout and stderr, the
// screen state it may have left (concealed text, the line-drawing character set, the
// alternate screen, a hidden cursor, mouse reporting), before box prints its audit
// report there, as the bwrap mode's relay does (tty.go). Field review, session 15: a
// Landlock run's `printf '\033[8m\033(0'` hid the report that box had moved the
// command's repository aside (TestLandlockScreenResetBeforeReport).
func resetScreen(fds []uintptr) {
	if protectionOff(ProtTerminal) {
		return
	}
	for _, fd := range fds[1:] {
		if _, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err != nil {
			continue
		}
		if !ttyForeground(int(fd)) {
			return
		}
		withoutTTOU(func() { _, _ = unix.Write(int(fd), []byte(ttyfilter.Reset)) })
		return
	}
}

// stdioFds are the command's stdin, stdout and stderr as descriptors: a file's own, else
// a pipe box copies through; done closes box's ends and waits for the copies.
func stdioFds(stdin io.Reader, stdout, stderr io.Writer) ([]uintptr, func(), error) {
	var closers []*os.File
	var waits []chan struct{}
	fds := make([]uintptr, 3)
	open := func(i int, r io.Reader, w io.Writer) error {
		if f, ok := r.(*os.File); ok && i == 0 {
			fds[i] = f.Fd()
			return nil
		}
		if f, ok := w.(*os.File); ok && i > 0 {
			fds[i] = f.Fd()
			return nil
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return err
		}
		if i == 0 {
			fds[i] = pr.Fd()
			closers = append(closers, pr)
			// stdin's copy may block on a reader that never ends: not waited for.
			go func() {
				if r != nil {
					io.Copy(pw, r)
				}
				pw.Close()
			}()
			return nil
		}
		if w == nil {
			w = io.Discard
		}
		ch := make(chan struct{})
		fds[i] = pw.Fd()
		closers = append(closers, pw)
		go func() { io.Copy(w, pr); pr.Close(); close(ch) }()
		waits = append(waits, ch)
		return nil
	}
	var err error
	if err = open(0, stdin, nil); err == nil {
		if err = open(1, nil, stdout); err == nil {
			err = open(2, nil, stderr)
		}
	}
	done := func() {
		for _, c := range closers {
			c.Close()
		}
		for _, w := range waits {
			<-w
		}
	}
	if err != nil {
		done()
	}
	return fds, done, err
}

// continueInFront: box on a terminal shares its group with the command. In the
// background (box run ... &, or bg after Ctrl-Z) a command that reads the terminal is
// stopped (SIGTTIN), and bash's fg gives the group the terminal but sends no SIGCONT to
// a job it saw running (box was): the command stayed stopped, the shell stuck (field
// review, session 16, TestLandlockBackgroundThenFg). So each time box finds its group in
// front again (a look every 200 ms until the run ends) it continues the group.
//
// A command (cmd, box's child) that stops alone, as node's Ctrl-Z does (SIGTSTP to its
// own pid) or a SIGSTOP to itself, left box running and waiting for it: the operator's
// shell waited for box, nothing continued the command, the terminal hung (field review,
// session 17). So box, finding it stopped, stops its group as the terminal would have:
// the shell says Stopped, and fg continues box and the command together. When the kernel
// drops that stop (box's group is orphaned: a parent without job control), box continues
// the command at once.
func continueInFront(ended <-chan struct{}, cmd int) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	front := ForegroundTerminal()
	for {
		select {
		case <-ended:
			return
		case <-t.C:
			now := ForegroundTerminal()
			if now && !front {
				syscall.Kill(0, syscall.SIGCONT)
			}
			front = now
			if stoppedChild(cmd) {
				stopOwnGroup() // tty_suspend.go
				if stoppedChild(cmd) {
					syscall.Kill(cmd, syscall.SIGCONT)
				}
				front = ForegroundTerminal()
			}
		}
	}
}

// stoppedChild is whether pid is box's child (not yet reaped: its pid is not reused) and
// stopped.
func stoppedChild(pid int) bool {
	st, err := procStat(pid)
	return err == nil && len(st) > 1 && st[0] == "T" && st[1] == strconv.Itoa(os.Getpid())
}
