package bwrap

// Trust between runs. What persists for an agent (the instance directory's ~/.claude:
// hooks, settings, CLAUDE.md, its login; the nix = "store" project store under it; a
// persistent box's home) is written by every run that uses it, and obeyed by the next.
// A run's flags widen it (a tier, allow names, --env, mounts, auth passthrough, syscall
// groups, --host-port, --ssh-host), so a narrow run could plant what a wider one then runs with the wider reach.
//
// box records, in the instance directory's root (which no sandbox sees), the reach of
// the last run that used it. A run within that reach goes on as before (its own, equal
// or narrower, reach is recorded). A run that reaches further never starts on what the
// narrower runs left: box run sets the whole state aside, unread, and starts fresh,
// saying so; a persistent box refuses (its home is the user's work), and says how to go
// on. docs/bwrap.md ("Trust between runs") gives the reasons.
//
// Runs at once on one instance directory share it live: a narrower run would write what
// a wider one still running reads. So they must have the same reach: the run that finds
// the directory unused settles it as above and records its reach; a run that starts
// while others use it is refused (ConcurrentReachError) unless its reach is the
// record's, and writes nothing.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/shellquote"
	"github.com/heavy-duty/box/policy"
)

// ReachFile is the record, in the root of an instance directory.
const ReachFile = "box-reach.json"

const reachMagic = "box/reach/1"

// ProtTrust sets aside (or refuses) the state a narrower run wrote before a wider run
// (switched off only in a test build, so the drill can show the breach).
const ProtTrust = "trust"

// Reach is everything that widens a run beyond the sandbox itself: what the agent's
// persisted state would be run with. Fields are a stable format (ReachFile).
type Reach struct {
	Magic    string      `json:"box"`
	Network  policy.Tier `json:"network"`
	Allow    []string    `json:"allow,omitempty"`    // the allowlist tier's names
	Env      []string    `json:"env,omitempty"`      // names of the variables that enter
	Mounts   []string    `json:"mounts,omitempty"`   // "rw:SRC:DST" or "ro:SRC:DST"
	Auth     []string    `json:"auth,omitempty"`     // host login files passed through
	Syscalls []string    `json:"syscalls,omitempty"` // filter groups opted back into
	// NixDaemon: the host's nix-daemon is reachable; HostAbstract: the host's abstract
	// unix sockets are (tier full without Landlock's scope).
	NixDaemon    bool `json:"nix_daemon,omitempty"`
	HostAbstract bool `json:"host_abstract,omitempty"`
	// Sockets: host unix sockets a profile named (unixsock.go); HostSockets: the
	// mediation could not be had, so every host path socket the sandbox sees is reachable.
	Sockets     []string `json:"sockets,omitempty"`
	HostSockets bool     `json:"host_sockets,omitempty"`
	// HostPorts: the host's 127.0.0.1 ports reached at host.box.internal (--host-port,
	// the profile's host_ports: publish.go). Published ports are not reach: they let the
	// host's loopback in, and reach nothing of the host.
	HostPorts []uint16 `json:"host_ports,omitempty"`
	// The filtering ssh-agent (sshfilter.go): the keys it shows, the hosts it signs
	// logins for (--ssh-host, the profile's ssh.hosts), whether it signs git objects.
	SSHKeys  []string `json:"ssh_keys,omitempty"`
	SSHHosts []string `json:"ssh_hosts,omitempty"`
	SSHSign  bool     `json:"ssh_sign,omitempty"`
	// Landlock: the run was in the Landlock mode (isolation.go), which holds less than
	// bwrap: no pid namespace (the host's processes, their command lines, within reach),
	// the host's terminal itself. A hostile review (session 18) planted SessionStart
	// hooks from a bwrap run that the next run of the profile, in the Landlock mode,
	// started with. Set by settleTrust, once the mode is chosen (isolation auto falls
	// back at launch); the tree's record (trust_tree.go) does not hold it.
	Landlock bool `json:"landlock,omitempty"`
}

// reachOf is the plan's reach; mounts are the profile's (box's own binds, the drill's
// runner, widen nothing). Pure.
func reachOf(p *Plan, mounts []Mount) Reach {
	r := Reach{
		Magic: reachMagic, Network: p.Spec.Network, Allow: p.Spec.Allow, Auth: p.Spec.AuthFiles,
		Syscalls: p.Policy.SyscallsAllowed, NixDaemon: p.Spec.NixDaemon,
		HostAbstract: p.Spec.Network.SharesHostNet() && !p.Spec.ScopeAbstract,
		Sockets:      slices.Clone(p.Spec.UnixSockets.Allowed),
		HostSockets:  !p.Spec.UnixSockets.Mediate,
		HostPorts:    slices.Clone(p.Spec.Ports.HostPorts),
	}
	if s := p.SSH; s != nil {
		r.SSHKeys, r.SSHSign = slices.Clone(s.Policy.Keys), s.Policy.Sign
		for _, h := range s.Policy.Hosts {
			r.SSHHosts = append(r.SSHHosts, h.Name)
		}
	}
	for _, v := range p.Vars {
		if v.Origin == "box" {
			continue // box's own (HOME, GIT_CONFIG_SYSTEM for the git identity): no reach
		}
		r.Env = append(r.Env, v.Name)
	}
	for _, m := range mounts {
		mode := "ro:"
		if m.RW {
			mode = "rw:"
		}
		r.Mounts = append(r.Mounts, mode+m.Src+":"+m.Dst)
	}
	for _, l := range []*[]string{&r.Allow, &r.Env, &r.Mounts, &r.Auth, &r.Syscalls, &r.Sockets, &r.SSHKeys, &r.SSHHosts} {
		*l = slices.Compact(slices.Sorted(slices.Values(*l)))
	}
	r.HostPorts = slices.Compact(slices.Sorted(slices.Values(r.HostPorts)))
	return r
}

// Beyond lists, in words, what r reaches that old does not (nil: r is within old). Pure.
func (r Reach) Beyond(old Reach) []string {
	var out []string
	if !tierWithin(r, old) {
		if r.Network.Proxied() && old.Network.Proxied() {
			out = append(out, "allow "+strings.Join(missing(r.Allow, old.Allow), ", "))
		} else {
			out = append(out, "network "+string(r.Network))
		}
	}
	add := func(what string, l []string) {
		if len(l) > 0 {
			out = append(out, what+" "+strings.Join(l, ", "))
		}
	}
	add("env", missing(r.Env, old.Env))
	var mounts []string
	for _, m := range r.Mounts {
		if !slices.Contains(old.Mounts, m) && !(strings.HasPrefix(m, "ro:") && slices.Contains(old.Mounts, "rw:"+m[3:])) {
			mounts = append(mounts, m)
		}
	}
	add("mount", mounts)
	add("auth passthrough", missing(r.Auth, old.Auth))
	add("syscalls", missing(r.Syscalls, old.Syscalls))
	if r.NixDaemon && !old.NixDaemon {
		out = append(out, "the host's nix-daemon")
	}
	if r.HostAbstract && !old.HostAbstract {
		out = append(out, "the host's abstract unix sockets")
	}
	add("unix sockets", missing(r.Sockets, old.Sockets))
	if r.HostSockets && !old.HostSockets {
		out = append(out, "the host's path unix sockets (not mediated)")
	}
	if !old.Network.SharesHostNet() { // tier full reaches every host port already
		var ports []string
		for _, h := range r.HostPorts {
			if !slices.Contains(old.HostPorts, h) {
				ports = append(ports, strconv.Itoa(int(h)))
			}
		}
		add("host ports", ports)
	}
	add("ssh keys", missing(r.SSHKeys, old.SSHKeys))
	add("ssh hosts", missing(r.SSHHosts, old.SSHHosts))
	if r.SSHSign && !old.SSHSign {
		out = append(out, "git signing with the host agent's keys")
	}
	if r.Landlock && !old.Landlock {
		out = append(out, "the Landlock mode (no namespaces: the host's processes and terminal)")
	}
	return out
}

// tierWithin: r's tier reaches nothing old's did not. The allowlist may name private
// hosts, so it is within internet only as far as full is: never.
func tierWithin(r, old Reach) bool {
	if !r.Network.Within(old.Network) {
		return false
	}
	if r.Network.Proxied() && old.Network.Proxied() {
		return len(missing(r.Allow, old.Allow)) == 0
	}
	return true
}

// missing is what of a is not in b.
func missing(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// errNoRecord: the instance directory has no record (earlier versions kept none).
var errNoRecord = errors.New("no record")

// readReach reads dir's record: errNoRecord when there is none; any other error means
// a record box cannot read (not a regular file, not box's, garbled): an unknown.
func readReach(dir string) (Reach, error) { return readReachAt(filepath.Join(dir, ReachFile)) }

// readReachAt is readReach of the record at path.
func readReachAt(path string) (Reach, error) {
	var r Reach
	data, err := readRegular(path)
	if os.IsNotExist(err) {
		return r, errNoRecord
	}
	if err != nil {
		return r, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("unreadable: %v", err)
	}
	if r.Magic != reachMagic {
		return r, fmt.Errorf("not box's (%q)", r.Magic)
	}
	return r, nil
}

func writeReach(dir string, r Reach) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	path := filepath.Join(dir, ReachFile)
	// Most runs repeat the last one's reach: rewriting the same bytes (a temporary file
	// renamed over the record) only costs the launch a directory update.
	if old, err := readRegular(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return writeHealing(path, data)
}

// WiderError: a launch in a persistent box reaches further than the box's last, so it
// would run what the narrower runs left in its home with the wider reach. box refuses.
type WiderError struct {
	Box    string
	Beyond []string // what the launch adds, in words
	Why    string   // "" or why the last reach is unknown
	Record string   // the record's path
	Home   string
}

func (e *WiderError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("box %s: its record of the reach it was last launched with is %s: refusing to launch what its home holds with a reach box cannot compare", e.Box, e.Why)
	}
	return fmt.Sprintf("box %s: this launch reaches further than the box's last (it adds %s): what the narrower launches left in its home would run with it", e.Box, strings.Join(e.Beyond, "; "))
}

// RunLock is the lock every run using an instance directory holds while it runs, in
// the directory's root (which no sandbox sees).
const RunLock = "box-run.lock"

// ConcurrentReachError: another run is using the instance directory with another reach
// (or its record cannot be read); the two would share what persists live.
type ConcurrentReachError struct {
	Dir    string
	Box    string   // the persistent box, "" for box run
	Tree   bool     // the run joins a project tree (Dir) other runs hold: trust_tree.go
	Beyond []string // how the two reaches differ, in words
	Why    string   // "" or why the record is unreadable
}

func (e *ConcurrentReachError) Error() string {
	what := "this project and profile"
	if e.Box != "" {
		what = "box " + e.Box
	}
	if e.Tree {
		what = "box in " + e.Dir + " (of any profile)"
	}
	if e.Why != "" {
		return fmt.Sprintf("another run of %s is going on and its reach is unknown (the record is %s): not launched", what, e.Why)
	}
	return fmt.Sprintf("another run of %s is going on with another reach (%s): the two would share the agent's state while both run, so this one is not launched", what, strings.Join(e.Beyond, "; "))
}

// Hint says what to do.
func (e *ConcurrentReachError) Hint() string {
	if e.Tree {
		return "launch it with the same reach as the run going on in this directory (network, --env, mounts...), or wait for that run to end"
	}
	return "launch it with the same reach as the run going on, use another profile, or wait for that run to end"
}

// settleTrust holds the rule before launch: it compares the plan's reach with the
// instance directory's record, sets aside (box run) or refuses (a box) when the run
// reaches further, and records the run's reach. It runs before PrepareInstance. The
// run holds the directory until leave; while it does, only runs of the same reach start.
func (p *Plan) settleTrust(stderr io.Writer) (leave func(), err error) {
	p.Reach.Landlock = p.Isolation.Landlock() // chosen by now (chooseIsolation)
	dir := p.Spec.InstanceDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	h, err := protect.Enter(filepath.Join(dir, RunLock))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			err = h.Entered()
		}
		if err != nil {
			h.Leave(nil)
		}
	}()
	if !h.Alone() && !protectionOff(ProtTrust) {
		old, rerr := readReach(dir)
		box := ""
		if p.Spec.HomeDir != "" {
			box = p.Policy.Box
		}
		if rerr != nil {
			return nil, &ConcurrentReachError{Dir: dir, Box: box, Why: rerr.Error()}
		}
		if d := append(p.Reach.Beyond(old), old.Beyond(p.Reach)...); len(d) > 0 {
			return nil, &ConcurrentReachError{Dir: dir, Box: box, Beyond: d}
		}
		return func() { h.Leave(nil) }, nil
	}
	if err := p.settleAlone(dir, stderr); err != nil {
		return nil, err
	}
	return func() { h.Leave(nil) }, nil
}

// settleAlone is settleTrust for a run no other run shares the directory with.
func (p *Plan) settleAlone(dir string, stderr io.Writer) error {
	old, err := readReach(dir)
	var beyond []string
	switch {
	case err == nil:
		beyond = p.Reach.Beyond(old)
	case errors.Is(err, errNoRecord) && p.Spec.HomeDir != "":
		// A box's stamp fixed its tier and profile; earlier versions varied only --allow:
		// its first launch with a record is taken as the one before it.
	case errors.Is(err, errNoRecord):
		if !stateLeft(dir, p.Spec.StateDir) {
			break // nothing to obey
		}
		beyond = []string{"whatever it adds: the runs that wrote the state kept no record of their reach"}
	default:
		if p.Spec.HomeDir != "" && !protectionOff(ProtTrust) {
			return &WiderError{Box: p.Policy.Box, Why: err.Error(), Record: filepath.Join(dir, ReachFile), Home: p.Spec.HomeDir}
		}
		beyond = []string{"whatever it adds: the record of the last run is " + err.Error()}
	}
	if len(beyond) > 0 && !protectionOff(ProtTrust) {
		if p.Spec.HomeDir != "" {
			return &WiderError{Box: p.Policy.Box, Beyond: beyond, Record: filepath.Join(dir, ReachFile), Home: p.Spec.HomeDir}
		}
		if onlyBoxsOwn(dir, p.Spec.StateDir, p.Policy.Instructions, p.Spec.Network) {
			return writeReach(dir, p.Reach)
		}
		aside, n, err := setAside(dir, p.Spec.StateDir)
		if err != nil {
			return fmt.Errorf("setting aside what narrower runs left: %w", err)
		}
		if aside != "" {
			fmt.Fprintf(stderr, "box: warning: this run reaches further than the last one of this project and profile (%s): what the earlier runs left (~/%s: hooks, settings, %s, login; the project's Nix store) would run with it, so it is set aside, unread, in %s, and this run starts fresh; copy back what you have reviewed%s\n",
				strings.Join(beyond, "; "), p.Spec.StateDir, "CLAUDE.md", aside, asideCount(dir, n))
		}
	}
	return writeReach(dir, p.Reach)
}

// stateLeft reports whether the instance directory holds anything a run left: its
// state directory not empty, a project store, or the Landlock mode's home.
func stateLeft(dir, stateDir string) bool {
	if ents, err := os.ReadDir(filepath.Join(dir, stateDir)); err == nil && len(ents) > 0 {
		return true
	} else if err != nil && !os.IsNotExist(err) {
		return true // unreadable: an unknown
	}
	for _, n := range []string{"nix", LandlockHome} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// onlyBoxsOwn: the instance directory holds nothing an earlier run left for a later one
// to obey, only what box itself writes into the state directory and rewrites before
// this launch: SANDBOX.md (from the policy), the instructions file holding only its
// import line, the git identity's file (rewritten, or removed without one), and the
// allowlist's refusal log when empty or when this run is on tier allowlist (recreated);
// no project store, no Landlock home. Setting that aside changes nothing but the noise:
// a field test (session 19) of a day's runs of the default profile, tier none for the
// tests and allowlist for npm install, set aside a copy of only these files at every
// install, each with a warning, towards the 999 copies after which box run refuses.
func onlyBoxsOwn(dir, stateDir, instructions string, tier policy.Tier) bool {
	for _, n := range []string{"nix", LandlockHome} {
		if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			return false
		}
	}
	state := filepath.Join(dir, stateDir)
	ents, err := os.ReadDir(state)
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := readRegular(filepath.Join(state, e.Name()))
		if err != nil {
			return false // a link, a directory, a fifo, too large: not box's
		}
		switch name := e.Name(); {
		case name == "SANDBOX.md" || name == GitConfigFile:
		case name == RefusalsFile && (len(b) == 0 || tier.Proxied()):
		case name == instructions && instructions != "" && string(b) == importLine+"\n":
		default:
			return false
		}
	}
	return true
}

// setAside moves the instance directory's state (the agent's state directory, the
// project store and the Landlock mode's home) into DIR/set-aside-N, outside every
// sandbox's view; "" when there was nothing to move. n is how many set-aside copies the
// directory holds now.
func setAside(dir, stateDir string) (aside string, n int, err error) {
	var parts []string
	for _, n := range []string{stateDir, "nix", LandlockHome} { // the Landlock mode's home: landlock_home.go
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "", 0, nil
	}
	sort.Strings(parts)
	for i := 1; ; i++ {
		if i == maxSetAside {
			return "", 0, errs.WithHint(&SetAsideFullError{Dir: dir},
				"review the copies and remove those you do not need: rm -rf "+shellquote.Quote(dir)+"/set-aside-*")
		}
		aside = filepath.Join(dir, fmt.Sprintf("set-aside-%d", i))
		if err := os.Mkdir(aside, 0o700); err == nil {
			break
		} else if !os.IsExist(err) {
			return "", 0, err
		}
	}
	for _, n := range parts {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(aside, n)), 0o700); err != nil {
			return "", 0, err
		}
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(aside, n)); err != nil {
			return "", 0, err
		}
	}
	copies, _ := filepath.Glob(filepath.Join(dir, "set-aside-*"))
	return aside, len(copies), nil
}

// maxSetAside bounds the set-aside copies of one instance directory: past it a wider run
// is refused until the operator removes some (nothing is deleted for them).
const maxSetAside = 1000

// SetAsideFullError: the instance directory holds maxSetAside-1 set-aside copies.
type SetAsideFullError struct{ Dir string }

func (e *SetAsideFullError) Error() string {
	return fmt.Sprintf("%s: %d set-aside copies: no room for another", e.Dir, maxSetAside-1)
}

// asideCount says, when more than one set-aside copy is kept, how many and how to remove
// them: alternating tiers sets the state aside at every widening (field review, session
// 18: the copies grew unseen).
func asideCount(dir string, n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" (%d set-aside copies are kept there; remove those you do not need: rm -rf %s/set-aside-N)", n, shellquote.Quote(dir))
}
