package bwrap

import (
	"errors"
	"fmt"
	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

// Request is what the operator asked for: the loaded profile and template, and the
// flags that override them. box run, box drill and persistent bwrap boxes all resolve
// one.
type Request struct {
	Profile   *profiles.Profile
	Template  *templates.Template
	Network   string   // a validated tier, or "" for the profile's
	Env       []string // --env names
	Command   []string // argv after --, or nil for the profile's / template's
	AllowRoot bool
	Allow     []string // --allow entries (tier allowlist only), added to the profile's
	// Persistent is set for a named bwrap box: everything else resolves exactly as for
	// box run, so a persistent box is never weaker than a throwaway sandbox.
	Persistent *Persistent
	// Binds are read-only binds box itself adds after the profile's (the drill's probe
	// runner): no profile rule applies to them, and neither SANDBOX.md nor the audit
	// lists them.
	Binds []Mount
	// Isolation is the mode box run's --isolation names ("": the profile's; isolation.go).
	Isolation string
	// DevShell is box run's --devshell ("": the profile's devshell; devshell.go).
	DevShell string
	// SSHHosts are --ssh-host's destinations, added to the profile's ssh.hosts (sshfilter.go).
	SSHHosts []string
	// Publish and HostPorts are --publish and --host-port, added to the profile's (publish.go).
	Publish   []policy.PortMap
	HostPorts []uint16
	// Exposed are a persistent box's exposures (box expose; publish_box.go).
	Exposed []policy.PortMap
	// Tree is the working directory as the launch guard holds it (Session.Run sets it;
	// launchguard.go): Gather takes it as is, since resolving the path again could land
	// elsewhere. "": Gather resolves the working directory itself (a dry run, the drill).
	Tree string
}

// Persistent is what a named bwrap box brings to a request: its own home in place of
// the tmpfs, its own instance directory in place of the per-project one, and the
// working directory it is bound to in place of the current one.
type Persistent struct {
	Name     string
	Home     string // host directory bound read-write at $HOME
	Instance string // host directory holding the agent's state dir, resolv.conf
	Workdir  string // the box's working directory, as stamped (Gather resolves links)
}

// command is what the sandbox runs: the request's, else the profile's, else the
// template's, else a shell.
func (r Request) command() []string {
	for _, c := range [][]string{r.Command, r.Profile.Command, r.Template.Command} {
		if len(c) > 0 {
			return c
		}
	}
	return []string{"sh"}
}

// toolNames are the tools a request wants linked: the template's, the profile's, and
// the command itself when it is a name, each once.
func (r Request) toolNames() []string {
	want := append(append([]string{}, r.Template.Tools...), r.Profile.Tools...)
	if c := r.command(); !strings.Contains(c[0], "/") {
		want = append(want, c[0])
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range want {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Facts are what the resolver knows of the host. Gather finds them; tests write them.
type Facts struct {
	// TermInfo: where the host finds $TERM's terminfo entry (terminfo.go).
	TermInfo TermInfoFact
	Workdir  string // the working directory, symlinks resolved
	Euid     int
	Egid     int
	Home     string   // $HOME inside and out (absolute, clean)
	Homes    []string // the home as $HOME and the password database say, resolved
	User     string   // USER and LOGNAME inside
	// BoxDirs are box's own configuration, data and cache directories (resolved): never
	// writable from inside, or the sandbox could rewrite its next run's policy (the
	// cache holds each project's dev shell, its shellHook included: BoxCacheDir).
	BoxDirs []string
	// BoxData is box's data directory ($XDG_DATA_HOME/box, resolved; one of BoxDirs):
	// a mount holding it or lying in it is said aloud.
	BoxData  string
	DataHome string // instance directories live under it
	Environ  []string
	Tools    map[string]ToolFact  // every name of Request.toolNames
	Mounts   map[string]MountFact // every profile mount's source, ~ expanded
	// AuthFiles are the host credential files that exist, when the profile asks for
	// auth passthrough.
	AuthFiles []string
	MemTotal  int64  // the host's RAM, bytes: the default memory limit is half of it
	Cgroup    Cgroup // where the user may make cgroups (DetectCgroup)
	// Nproc is box's own RLIMIT_NPROC (0: unlimited): the sandbox's tasks count toward
	// it on the host as well.
	Nproc uint64
	// Nofile is box's hard RLIMIT_NOFILE (0: unlimited or unread): box and bwrap need
	// descriptors of their own (checkNofile).
	Nofile uint64
	// Tree is what protect.Scan found in the working directory: its repositories and
	// the protected paths there.
	Tree protect.Tree
	// Built is the protected set Gather built from Tree (to read its git configs), with
	// the options it was built for: Resolve uses it when its own options are the same,
	// instead of building it again (protect.Build is a pure function of Tree and the
	// options; in a tree of 50 repositories it is thousands of paths, 20 ms of CPU).
	Built *BuiltSet
	// GitConfigs are the protected set's git config files as read, and the system ones
	// (gitcreds.go).
	GitConfigs map[string]GitConfigRead
	// SystemGitConfigs are the git configs under the system paths the sandbox can read
	// (/etc/gitconfig and its includes), in GitConfigs.
	SystemGitConfigs []string
	// SystemSecrets are policy.SystemSecrets' files as read (syssecrets.go).
	SystemSecrets map[string]GitConfigRead
	// LegacyInstance is the shared instance directory of earlier versions, when it
	// exists ("" otherwise).
	LegacyInstance string
	// PackageBins are the bin directories of the profile's Nix packages, realised on the
	// host (store paths, read-only inside).
	PackageBins []string
	// PackageCommands are the command names those directories hold.
	PackageCommands map[string]bool
	// HostNixStore: the host has /nix/store (a per-project store layers over it).
	HostNixStore bool
	// NixTools are the host's Nix commands (nix, nix-build, ...) that exist, for a
	// minimal PATH.
	NixTools []Tool
	// Arch is the architecture the syscall filter is built for (seccomp.Native).
	Arch string
	// RuntimeDir is $XDG_RUNTIME_DIR ("" when unset); RunID names this run (NewRunID).
	RuntimeDir, RunID string
	// LandlockABI is the kernel's Landlock ABI (LandlockABI; 0: none); BwrapSetuid: the
	// bwrap on PATH is setuid root. Both decide tier full's abstract-socket scope.
	LandlockABI int
	BwrapSetuid bool
	// UnixNotify: why the sandbox's unix sockets cannot be mediated (UnixNotifySupport; nil: they can).
	UnixNotify error
	// Host is the system paths the argv binds (DetectHost).
	Host Host
	// Git is the operator's global git user.name and user.email (ReadGitIdentity);
	// GitSigns what their global config signs every time (ReadGitSigning).
	Git      GitIdentity
	GitSigns string
	// DevShell is the dev shell the request names, evaluated on the host (nil: none).
	DevShell *DevShell
	// SSH is what the filtering ssh-agent needs (gatherSSH).
	SSH SSHFacts
}

// ToolFact is a tool looked up on the host PATH.
type ToolFact struct {
	Tool Tool
	Err  error // exec.ErrNotFound when absent
	// From is the PATH directory it was found in; Script: it lies under a home and
	// starts with "#!".
	From   string
	Script bool
}

// MountFact is a mount source with symlinks resolved.
type MountFact struct {
	Real string
	Err  error
	// File: the mount is not a directory (the post-run audit walks a read-write mount
	// that is a directory; a file it cannot judge).
	File bool
}

// Plan is a resolved run: the sandbox, the environment that enters it and its audit,
// what SANDBOX.md says, and warnings to print.
type Plan struct {
	Profile   *profiles.Profile
	Template  *templates.Template
	Spec      Spec
	Vars      []envaudit.Var
	Findings  []envaudit.Finding
	Policy    Policy
	Enforce   Enforcement // how Spec.Limits are held here
	Warnings  []string
	AllowRoot bool
	// Tier allowlist: the operator's run log and the control socket of box allow.
	NetLog, Control string
	// Protect is the protected set, bound read-only in Spec; the post-run audit reads
	// the same list (Protect.Paths). ProtectLock is the file Start holds while the
	// set's placeholders are in place.
	Protect     protect.Set
	ProtectLock string
	// Host is what Args needs of the machine (Facts.Host).
	Host Host
	// Reach is what widens this run (trust.go): the persisted state's record.
	Reach Reach
	// Git is the operator's git identity the sandbox's git gets (gitident.go).
	Git GitIdentity
	// Isolation is the launch's mode (isolation.go).
	Isolation IsolationPlan
	// GitCreds are the credentials found in the repository's git configs (gitcreds.go):
	// hidden by Spec.Redacted, refused in the Landlock mode.
	GitCreds []GitCred
	// SystemGitCreds are the git configs under the system paths that hold a credential
	// (gitcreds.go), found whether or not a test build hides them: the drill's row.
	SystemGitCreds []string
	// SSH is the filtering ssh-agent (sshfilter.go; nil: none).
	SSH *SSHPlan
	// BoxDirs are box's own directories (Facts.BoxDirs), which no sandbox may write:
	// the drill's box-state rows write there.
	BoxDirs []string
	// usernsKey is the user-namespace facts' key (usernsKey), taken once before the
	// launch by chooseIsolation and used after it (usernsAfter).
	usernsKey string
	// listings are the scan's directory listings (Facts.Tree), for the audit's walk.
	listings *dirlist.Cache
}

// Resolve turns a request and the host's facts into a plan. It is pure.
func Resolve(r Request, f Facts) (*Plan, error) {
	network := r.Profile.Network
	if r.Network != "" {
		network = policy.Tier(r.Network)
	}
	p := &Plan{Profile: r.Profile, Template: r.Template, AllowRoot: r.AllowRoot, BoxDirs: f.BoxDirs}
	allowed, err := p.allowlist(r, network)
	if err != nil {
		return nil, err
	}
	if f.Euid == 0 && r.AllowRoot {
		p.warn("running as root (--allow-root): files only root may read are readable in the sandbox")
	}
	if f.Home == "" {
		return nil, &NoHomeError{}
	}
	if envMap(f.Environ)["PATH"] == "" {
		return nil, &EmptyPathError{}
	}
	if err := checkNofile(f.Nofile); err != nil {
		return nil, err
	}
	if err := checkWorkdir(f); err != nil {
		return nil, err
	}
	wd := f.Workdir
	instanceDir := InstanceDir(f.DataHome, wd, r.Profile.Name)
	if f.LegacyInstance != "" && r.Persistent == nil {
		p.warn("%s, the instance directory (~/.claude) earlier versions shared between every profile, is no longer used: each profile now has its own (%s), so one profile's sandbox cannot plant hooks another runs; copy what you want from the old one, then remove it", f.LegacyInstance, instanceDir)
	}
	agent := r.Template.AgentOf()
	// writable lists the host directories the sandbox can write besides its mounts: a
	// path found in one may have been planted there.
	writable := []string{wd, instanceDir}
	var homeDir string
	if b := r.Persistent; b != nil {
		if r.Profile.AuthPassthrough {
			return nil, errs.WithHint(fmt.Errorf("profile %q (%s) sets auth_passthrough, which a bwrap box does not honour: a box keeps its own login", r.Profile.Name, r.Profile.Source),
				"log in inside the box instead (its credentials stay in the box); use a profile without auth_passthrough")
		}
		if !filepath.IsAbs(b.Home) || !filepath.IsAbs(b.Instance) {
			return nil, fmt.Errorf("box %q: its home and instance directories must be absolute", b.Name)
		}
		homeDir, instanceDir = filepath.Clean(b.Home), filepath.Clean(b.Instance)
		writable = []string{wd, instanceDir, homeDir}
	}
	inWritable := func(p string) bool {
		for _, d := range writable {
			if within(p, d) {
				return true
			}
		}
		return false
	}
	command := r.command()

	// The protected set: what host tools execute or obey, read-only inside.
	pset, err := f.Built.set(f.Tree, protect.Options{Add: r.Profile.ProtectAdd, Drop: r.Profile.ProtectDrop})
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", r.Profile.Name, err) // OptionError carries its hint
	}
	p.Protect, p.ProtectLock = pset, LegacyInstanceDir(f.DataHome, wd)+".lock"
	p.listings = f.Tree.Listings
	p.Warnings = append(p.Warnings, pset.Warnings...)
	if err := p.resolveGitCreds(pset, f.SystemGitConfigs, f.GitConfigs, instanceDir); err != nil {
		return nil, err
	}
	p.auditSystemSecrets(f.SystemSecrets) // syssecrets.go

	// Tools: a missing tool is a warning; a missing command is an error.
	var tools []Tool
	for _, name := range r.toolNames() {
		tf, ok := f.Tools[name]
		if !ok {
			tf.Err = exec.ErrNotFound
		}
		err := tf.Err
		if errors.Is(err, exec.ErrNotFound) && f.PackageCommands[name] {
			continue // a profile package provides it, on PATH inside
		}
		if err == nil && inWritable(tf.Tool.Path) {
			// A PATH entry the sandbox can write (a project's bin/ added by direnv)
			// could hold a planted link to anything: never bind through it.
			err = fmt.Errorf("%s resolves to %s, inside a directory the sandbox can write", name, tf.Tool.Path)
		}
		if err != nil {
			if name == command[0] {
				if errors.Is(err, exec.ErrNotFound) {
					return nil, errs.WithHint(&CommandError{Name: name, NotFound: true, Where: "on your PATH"},
						"install it, or name another command after --")
				}
				return nil, errs.WithHint(err, "run a command installed outside the working directory, or give its path inside the sandbox (./bin/...)")
			}
			if errors.Is(err, exec.ErrNotFound) {
				p.warn("tool %q is not on your PATH; it will be missing in the sandbox", name)
			} else {
				p.warn("tool %s; not linked into the sandbox", err)
			}
			continue
		}
		tools = append(tools, tf.Tool)
		p.warnScriptAlone(tf, r.Profile.Mounts, f)
	}

	var mounts []Mount
	for _, m := range r.Profile.Mounts {
		src, dst := ExpandHome(m.Path, f.Home), ExpandHome(m.Target, f.Home)
		mf, ok := f.Mounts[src]
		if !ok {
			return nil, fmt.Errorf("profile %q mounts %s: not looked up", r.Profile.Name, src)
		}
		if mf.Err != nil {
			return nil, errs.WithHint(fmt.Errorf("profile %q mounts %s: %w", r.Profile.Name, src, mf.Err), "create it, or remove the mount from the profile")
		}
		real := mf.Real
		// bwrap would follow a symlink; box binds what it resolved and judges that. A
		// link inside a directory the sandbox can write may have been planted there.
		if real != src && inWritable(src) {
			return nil, errs.WithHint(fmt.Errorf("profile %q mounts %s, a symlink (to %s) inside a directory the sandbox can write", r.Profile.Name, src, real),
				"mount the target itself, or remove the link")
		}
		if m.RW() {
			if err := refuseBoxDirs(f.BoxDirs, real, "a read-write mount"); err != nil {
				return nil, err
			}
		}
		// box's data directory holds what a sandbox should not read: the homes of bwrap
		// boxes with the logins made in them, other projects' agent state. A hostile
		// review (session 16) read a box's ~/.claude/.credentials.json through a
		// read-only mount of ~/.local/share, warned only about Tailscale's state. As for
		// any well-known secret path, a read-only mount of it is said aloud.
		if d := f.BoxData; d != "" && (within(real, d) || within(d, real)) {
			p.warn("profile %q mounts %s, which holds box's own data (%s: the homes and logins of bwrap boxes, other projects' agent state)", r.Profile.Name, real, d)
		}
		if w := policy.KernelAt(real, m.RW()); w != "" && !protectionOff(ProtKernelMounts) {
			mode := "a mount"
			if m.RW() {
				mode = "a read-write mount"
			}
			return nil, errs.WithHint(fmt.Errorf("profile %q: refusing %s of %s: it gives the sandbox %s", r.Profile.Name, mode, real, w),
				"remove the mount from the profile (the sandbox has its own /proc, /dev and a read-only /sys)")
		}
		// The working directory is bound at its own path, with the protected set's
		// read-only binds and the git configs' copies on top: the same tree shown at
		// another path through a mount would have none of them.
		if (within(f.Workdir, real) || within(real, f.Workdir)) && dst != real && !protectionOff(ProtMountOverlap) {
			return nil, errs.WithHint(&MountOverlapError{Profile: r.Profile.Name, Src: real, Dst: dst, Workdir: f.Workdir},
				"mount it at its own path (target = path), or mount a directory that neither holds nor lies in the working directory")
		}
		mounts = append(mounts, Mount{Src: real, Dst: dst, RW: m.RW()})
		if m.RW() && mf.File {
			// The audit walks a read-write directory as it walks the working directory;
			// what a host tool makes of a file it cannot tell, so it says so.
			p.warn("profile %q mounts the file %s read-write: the post-run audit does not judge it, so what the sandbox writes there stays; never mount read-write a file a host tool runs or obeys (a shell rc, a git config)", r.Profile.Name, real)
		}
		for _, h := range f.Homes {
			if w := policy.SecretAt(real, h); w != "" {
				p.warn("profile %q mounts %s, which holds %s", r.Profile.Name, real, w)
				break
			}
		}
	}

	p.warnHooksOutside(f.Tree.HooksOutside, mounts, r.namesLandlock())
	if !r.namesLandlock() {
		p.warnHookTools(f.Tree.HookTools, f.Tree.HookToolsMore, mounts, f.Home)
	}

	var auth []string
	if r.Profile.AuthPassthrough {
		auth = f.AuthFiles
		if len(auth) == 0 {
			p.warn("auth passthrough: no host login found (~/%s); log in inside the sandbox", strings.Join(agent.CredentialPaths(), ", ~/"))
		}
	}

	var allow envaudit.Allowlist
	allow.Add("base", envaudit.Base...)
	allow.Add("profile", r.Profile.Env...)
	set := envMap(f.Environ)
	for _, n := range r.Env {
		if err := profiles.ValidEnvName(n); err != nil {
			return nil, &errs.UsageError{Err: &EnvNameError{Err: err}}
		}
		allow.Add("--env", n)
		if !strings.HasSuffix(n, "*") && set[n] == "" {
			p.warn("--env %s: not set in your environment", n)
		}
	}
	minimal := r.Profile.Path == profiles.PathMinimal
	if minimal {
		for _, t := range f.NixTools {
			if !slices.ContainsFunc(tools, func(x Tool) bool { return x.Name == t.Name }) {
				tools = append(tools, t)
			}
		}
	}
	daemon := r.Profile.Nix == profiles.NixDaemon
	if daemon {
		p.warn("nix = \"daemon\": the host's nix-daemon is reachable inside; what it builds and fetches runs on the host, on the host's network, outside tier %s and outside the sandbox", network)
	}
	boxSet := map[string]string{
		"HOME": f.Home, "PATH": f.DevShell.devShellPATH(SandboxPATH(f.PackageBins, minimal)), "BOX_SANDBOX": "bwrap",
		"USER": f.User, "LOGNAME": f.User,
	}
	if agent.ConfigEnv != "" {
		// The agent keeps its config file in its state dir instead of $HOME (see Args).
		boxSet[agent.ConfigEnv] = filepath.Join(f.Home, agent.StateDir)
	}
	if daemon {
		boxSet["NIX_REMOTE"] = "daemon"
	}
	var nixStore string
	if r.Profile.Nix == profiles.NixStore {
		if !f.HostNixStore {
			return nil, errs.WithHint(fmt.Errorf("profile %q: nix = \"store\" layers a store over the host's /nix/store, and this host has none", r.Profile.Name),
				"install Nix on the host, or set nix = \"none\"")
		}
		nixStore = filepath.Join(instanceDir, "nix")
		// Single-user Nix inside: no build sandbox (no user namespaces in here) and no
		// build users; without a network, no substituters to wait for.
		conf := "sandbox = false\nbuild-users-group =\nexperimental-features = nix-command flakes\n"
		if network.Offline() {
			conf += "substituters =\n"
		}
		boxSet["NIX_CONFIG"] = conf
	}
	term := p.terminfo(f.TermInfo, boxSet) // terminfo.go
	p.gitIdentity(r.Profile.PassGitIdentity(), f.Git, f.Home, agent.StateDir, boxSet)
	p.warnGitSigning(f.GitSigns)
	if err := p.resolveSSH(r, f, network, boxSet); err != nil {
		return nil, err
	}
	// A name box sets itself takes box's value whatever --env asks (field review,
	// session 18: --env PATH and --env HOME were taken without a word).
	for _, n := range r.Env {
		if _, ok := boxSet[n]; ok {
			p.warn("--env %s: box sets %s inside the sandbox; your value does not enter", n, n)
		}
	}
	p.Vars = f.DevShell.merge(allow.Filter(f.Environ, boxSet)) // devshell.go
	setTerm(p.Vars, term)
	p.Findings = envaudit.Audit(p.Vars)

	toolNames := make([]string, len(tools))
	for i, t := range tools {
		toolNames[i] = t.Name
	}
	p.Policy = Policy{
		Profile: r.Profile.Name, Template: r.Template.Name, Network: network, Workdir: wd,
		Tools: toolNames, Auth: len(auth) > 0, Notes: r.Template.Notes,
		Protected: pset.ReadOnly(),
		StateDir:  agent.StateDir, Instructions: agent.Instructions, Credentials: agent.Credentials,
		Packages: r.Profile.Packages, MinimalPath: minimal, NixDaemon: daemon, NixStore: nixStore != "",
		Allow: allowed, GitIdentity: p.Git.String(), GitCreds: len(p.GitCreds) > 0,
	}
	p.noteDevShell(f) // devshell.go
	if network.Proxied() {
		if f.RunID == "" {
			return nil, errors.New("allowlist tier: no run id")
		}
		p.Policy.RunID = f.RunID
		p.NetLog = NetworkLog(f.DataHome, f.RunID)
		p.Control = ControlSocket(f.RuntimeDir, f.DataHome, f.RunID)
	}
	if r.Persistent != nil {
		p.Policy.Box = r.Persistent.Name
	}
	for _, m := range mounts {
		if m.RW {
			p.Policy.Writable = append(p.Policy.Writable, m.Dst)
		} else {
			p.Policy.ReadOnly = append(p.Policy.ReadOnly, m.Dst)
		}
	}
	// The syscall filter, less the groups a user profile opted back into (Parse
	// refuses syscalls in a built-in profile).
	filter, err := seccomp.ForArch(f.Arch, r.Profile.Syscalls)
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", r.Profile.Name, err) // its hint names the groups
	}
	p.Policy.SyscallsAllowed = filter.OptIn
	if len(filter.OptIn) > 0 {
		p.warn("profile %q turns off the syscall filter's %s group(s): the sandbox may use them", r.Profile.Name, strings.Join(filter.OptIn, ", "))
	}
	p.Spec = Spec{
		Workdir: wd, Home: f.Home, HomeDir: homeDir, InstanceDir: instanceDir, StateDir: agent.StateDir,
		Network: network, Allow: allowed, Mounts: mounts, AuthFiles: auth, Tools: tools,
		GitBinds: pset.Binds, Pins: pset.Pins, ReadOnly: pset.ReadOnly(),
		Command: f.DevShell.wrap(command), Hostname: "box", NixDaemon: daemon,
		NixStore: nixStore, UID: f.Euid, GID: f.Egid, Seccomp: &filter,
		// The block fd always: the limits go on the sandbox's pid 1 before it is released.
		InfoFD: InfoFD, BlockFD: BlockFD, SeccompFD: SeccompFD,
		Redacted: p.Spec.Redacted,
	}
	p.Spec.Mounts = append(p.Spec.Mounts, r.Binds...)
	if network.OwnResolver() {
		// The tier's resolver (the internet helper's, or box's own on the sandbox's
		// loopback), fixed before launch: a bind over /etc/resolv.conf.
		p.Spec.ResolvConf = filepath.Join(instanceDir, "resolv.conf")
	}
	p.Host = f.Host
	p.Spec.ScopeAbstract = p.scopeAbstract(network, f)
	p.Policy.AbstractScoped = p.Spec.ScopeAbstract
	p.resolveSockets(r.Profile.Sockets, r.Profile.Name, wd, network.SharesHostNet(), p.Spec.ScopeAbstract, daemon, f)
	p.sshSpec()
	if err := p.resolvePorts(r, network, instanceDir); err != nil { // publish.go
		return nil, err
	}
	p.Reach = reachOf(p, mounts) // trust.go
	if p.Spec.Limits, p.Enforce, err = resolveLimits(r.Profile, f.MemTotal, f.Nproc, f.Cgroup, f.Euid); err != nil {
		return nil, err
	}
	p.Spec.Tmpfs = TmpfsFor(p.Spec.Limits.Memory, homeDir != "")
	p.Policy.Limits = limitsText(p.Spec.Limits, p.Spec.Tmpfs)
	p.Warnings = append(p.Warnings, p.Enforce.Unenforced...)
	return p, nil
}

// scopeAbstract decides the abstract-socket scope: tier full only (the others have a
// network namespace, and with it an abstract namespace, of their own), when the kernel
// has it and bwrap can run under no_new_privs; otherwise the exposure is a warning.
func (p *Plan) scopeAbstract(network policy.Tier, f Facts) bool {
	if !network.SharesHostNet() {
		return false
	}
	const what = "tier full: the host's abstract unix sockets (an X server, D-Bus, container shims) are reachable from the sandbox"
	switch {
	case f.LandlockABI < landlockScopeABI:
		p.warn("%s: closing them needs Landlock ABI %d (Linux 6.12 or later, with landlock in the lsm= list); this kernel has %s", what, landlockScopeABI, landlockText(f.LandlockABI))
		return false
	case f.BwrapSetuid:
		p.warn("%s: bwrap is setuid root here, and the Landlock scope that closes them needs no_new_privs, under which a setuid bwrap loses its privileges", what)
		return false
	}
	return true
}

// AbstractLine is the dry run's account of the abstract-socket scope ("" outside tier
// full, where the sandbox's own network namespace holds its abstract sockets).
func (p *Plan) AbstractLine() string {
	if !p.Spec.Network.SharesHostNet() {
		return ""
	}
	if p.Spec.ScopeAbstract {
		return "abstract sockets: the host's are unreachable (Landlock scope)"
	}
	return "abstract sockets: the host's are REACHABLE (no Landlock scope here; see the warning)"
}

func landlockText(abi int) string {
	if abi == 0 {
		return "no Landlock"
	}
	return fmt.Sprintf("ABI %d", abi)
}

// allowlist is the allowlist tier's patterns (lists expanded, deduplicated) for the
// tier network: the profile's allow and --allow. --allow on another tier is refused; a
// profile's allow that a --network override leaves unused is a warning.
func (p *Plan) allowlist(r Request, network policy.Tier) ([]string, error) {
	if !network.Proxied() {
		if len(r.Allow) > 0 {
			return nil, &errs.UsageError{Err: &AllowTierError{Tier: network}}
		}
		if len(r.Profile.Allow) > 0 {
			p.warn("network %s: the profile's allow list does not apply", network)
		}
		return nil, nil
	}
	if _, err := policy.ParseAllow(r.Allow); err != nil {
		return nil, &errs.UsageError{Err: &AllowPatternError{Err: err}}
	}
	ps, err := policy.ParseAllow(append(append([]string{}, r.Profile.Allow...), r.Allow...))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ps))
	for i, pt := range ps {
		out[i] = pt.String()
	}
	if len(out) == 0 {
		p.warn("network allowlist with nothing allowed: every connection will be refused (add --allow NAME, or allow = [...] in the profile)")
	}
	return out, nil
}

func (p *Plan) warn(format string, a ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, a...))
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// ExpandHome expands a leading ~/ to home and cleans p.
func ExpandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	// p has dir (without a trailing slash) and a slash as its prefix, compared in
	// place: a concatenation here allocated once per call, thousands of calls a run.
	d := strings.TrimSuffix(dir, "/")
	return len(p) > len(d) && p[len(d)] == '/' && p[:len(d)] == d
}

// checkWorkdir refuses a working directory whose read-write bind would expose too much:
// a home directory (as $HOME says and as the password database says: $HOME can be
// overridden), a system directory, a secret directory, or box's own files.
func checkWorkdir(f Facts) error {
	for _, h := range f.Homes {
		if err := CheckWorkdir(f.Workdir, h); err != nil {
			return err
		}
		if w := policy.SecretAt(f.Workdir, h); w != "" {
			// By place, whether there now or not: the sandbox could make them (field
			// review, session 19: ~/.config was refused for the Google Cloud credentials
			// of a machine without any).
			return &WorkdirError{Dir: f.Workdir, Why: "it holds, or would hold, " + w}
		}
	}
	return refuseBoxDirs(f.BoxDirs, f.Workdir, "the working directory")
}

// MountOverlapError: a profile mount shows the working directory (or a part of it) at
// another path than its own, where the protected set's read-only binds and the copies
// of git configs without their credentials, all bound at the working directory's own
// paths, are not. A hostile review (session 16) read, through a read-only mount of
// ~/src at /src, the token box said it hid in ~/src/app/.git/config, and through a
// read-write one wrote /src/app/.git/hooks/pre-commit during the run. Nothing has run.
type MountOverlapError struct {
	Profile, Src, Dst, Workdir string
}

func (e *MountOverlapError) Error() string {
	how := "holds"
	if within(e.Src, e.Workdir) {
		how = "lies in"
	}
	return fmt.Sprintf("profile %q mounts %s at %s: it %s the working directory %s, which the sandbox would see there without the protected set's read-only paths and with the git credentials box hides", e.Profile, e.Src, e.Dst, how, e.Workdir)
}

// ProtMountOverlap names the refusal of a mount showing the working directory at
// another path (MountOverlapError), so the drill's mount-view row can be shown to catch
// its absence.
const ProtMountOverlap = "mount-overlap"

// ProtBoxDirs names the refusal of a writable path holding box's own directories
// (refuseBoxDirs), so the drill's box-state rows can be shown to catch its absence.
const ProtBoxDirs = "box-dirs"

// refuseBoxDirs refuses a writable path that holds (or lies in) box's own configuration
// or data: from inside, the sandbox could rewrite the policy of its next run.
func refuseBoxDirs(boxDirs []string, p, what string) error {
	if protectionOff(ProtBoxDirs) {
		return nil
	}
	for _, d := range boxDirs {
		if within(d, p) || within(p, d) {
			hint := "run box from a project directory that does not contain " + d
			if what != "the working directory" {
				hint = "mount it read-only, or mount a directory that does not contain " + d
			}
			return errs.WithHint(fmt.Errorf("refusing %s %s: it holds box's own files (%s), which the sandbox could rewrite for its next run", what, p, d), hint)
		}
	}
	return nil
}

// BuiltSet is a protected set as protect.Build returned it for a tree and options
// (Facts.Built).
type BuiltSet struct {
	opts   protect.Options
	exists map[string]protect.FileKind // the tree's (its identity)
	Set    protect.Set
	Err    error
}

// buildSet is protect.Build of t and o, kept with both.
func buildSet(t protect.Tree, o protect.Options) *BuiltSet {
	s, err := protect.Build(t, o)
	return &BuiltSet{opts: o, exists: t.Exists, Set: s, Err: err}
}

// set is the protected set of t under o: b's when it was built from this very tree
// (the scan's Exists map, made once per scan) and equal options, else built now.
func (b *BuiltSet) set(t protect.Tree, o protect.Options) (protect.Set, error) {
	if b == nil || t.Exists == nil || reflect.ValueOf(b.exists).UnsafePointer() != reflect.ValueOf(t.Exists).UnsafePointer() ||
		!slices.Equal(b.opts.Add, o.Add) || !slices.Equal(b.opts.Drop, o.Drop) {
		b = buildSet(t, o)
	}
	return b.Set, b.Err
}

// warnScriptAlone: a tool is bound alone, its file only; a script under your home that
// loads files beside it then fails inside. Field test (session 19): node from nvm ran,
// and its npm (~/.nvm/versions/node/V/lib/node_modules/npm/bin/npm-cli.js) failed with
// "Cannot find module '../lib/cli.js'". A profile mount of its directory (read-only)
// brings them in: no warning then. The directory named is the PATH entry's parent when
// that is a bin/, unless it is the home itself or ~/.local (box's own data, other tools).
func (p *Plan) warnScriptAlone(tf ToolFact, mounts []profiles.Mount, f Facts) {
	if !tf.Script {
		return
	}
	for _, m := range mounts {
		if src := ExpandHome(m.Path, f.Home); within(tf.Tool.Path, src) || within(tf.Tool.Path, f.Mounts[src].Real) && f.Mounts[src].Real != "" {
			return
		}
	}
	dir := tf.From
	if filepath.Base(dir) == "bin" {
		dir = filepath.Dir(dir)
	}
	suggest := ""
	if dir != f.Home && dir != filepath.Join(f.Home, ".local") && within(tf.Tool.Path, dir) {
		suggest = fmt.Sprintf(" (here: [[mounts]] path = %q)", "~/"+strings.TrimPrefix(dir, f.Home+"/"))
	}
	p.warn("%s is a script under your home (%s), bound into the sandbox alone: one that loads files beside it (a version manager's npm, a pip --user command) fails there; a profile's [[mounts]] entry for the directory it loads from, read-only, brings them in%s", tf.Tool.Name, tf.Tool.Path, suggest)
}

// warnHooksOutside says which of your git hooks commits inside do not run: git skips a
// hooks directory it cannot find without a word, so a commit inside passed over your
// pre-commit checks silently (field review, session 16; TestRunHooksOutsideWarned). A
// repository's own core.hooksPath outside the working directory runs inside once a
// profile mounts it; your global config's is not read inside at all.
func (p *Plan) warnHooksOutside(hooks []protect.HooksFact, mounts []Mount, landlock bool) {
	// Your global core.hooksPath: one warning per directory it names, naming every
	// repository, not one each (a repository with a linked worktree inside printed it
	// twice at every launch, and a command wrapper launches box for every command: field
	// review, session 19).
	var globalDirs []string
	globalTops := map[string][]string{}
	defer func() {
		for _, dir := range globalDirs {
			if tops := globalTops[dir]; len(tops) == 1 {
				p.warn("your global git config's core.hooksPath (%s) does not apply inside: git there reads no global config of yours, so commits in %s skip those hooks (its .git/hooks run instead); run them on the host, or set core.hooksPath in the repository's own config", dir, tops[0])
			} else {
				p.warn("your global git config's core.hooksPath (%s) does not apply inside: git there reads no global config of yours, so commits in %s skip those hooks (their .git/hooks run instead); run them on the host, or set core.hooksPath in each repository's own config", dir, strings.Join(tops, ", "))
			}
		}
	}()
	for _, h := range hooks {
		if landlock && !h.Global {
			p.warn("the git hooks of %s are not granted to the Landlock mode: its core.hooksPath names %s, outside the working directory, so commits inside fail (git cannot execute them); commit on the host, or run in the bwrap mode with a profile's [[mounts]] path = %q (mode \"ro\")", h.Top, h.Dir, h.Dir)
			continue
		}
		if h.Global {
			if globalTops[h.Dir] == nil {
				globalDirs = append(globalDirs, h.Dir)
			}
			globalTops[h.Dir] = append(globalTops[h.Dir], h.Top)
			continue
		}
		visible := false
		for _, m := range mounts {
			if within(h.Dir, m.Dst) {
				visible = true
				break
			}
		}
		if !visible {
			p.warn("the git hooks of %s are not in the sandbox: its core.hooksPath names %s, outside the working directory, and git skips a hooks directory it cannot find, so commits inside do not run them; a profile's [[mounts]] path = %q (mode \"ro\") brings them in", h.Top, h.Dir, h.Dir)
		}
	}
}

// warnHookTools says which hooks git runs inside call a tool by a path the sandbox does
// not show (protect.HookToolFact), unless a profile's mount brings the path (and, for a
// link, its target) in: the hook fails inside, or skips what it checks, at every
// commit, and nothing said so at launch (field review, session 21: a pre-commit hook
// running ~/.local/bin/ruff; the pre-commit framework's, whose INSTALL_PYTHON lies in a
// pipx venv under the home).
// The scan names at most a few dozen; more counts the rest, said in one line.
func (p *Plan) warnHookTools(tools []protect.HookToolFact, more int, mounts []Mount, home string) {
	defer func() {
		if more > 0 {
			p.warn("the hooks git runs inside call %d more tools by paths the sandbox may not show, not named one by one (a hook naming that many is the tree's doing: read the hooks before you commit inside)", more)
		}
	}()
	shown := func(path string) bool {
		for _, m := range mounts {
			if within(path, m.Dst) && m.Src == m.Dst {
				return true
			}
		}
		return false
	}
	for _, t := range tools {
		if shown(t.Tool) && (t.Real == "" || shown(t.Real)) {
			continue
		}
		hook := filepath.Base(t.Hook)
		rel := t.Hook
		if r, err := filepath.Rel(t.Top, t.Hook); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
		if t.Framework {
			p.warn("the %s hook of %s (%s, the pre-commit framework's) runs %s, which is not in the sandbox, and no pre-commit is in the sandbox's /usr/local/bin, /usr/bin or /bin: commits inside fail (\"`pre-commit` not found\"); commit on the host, or install pre-commit system-wide (apt-get install pre-commit) and run on a network tier that reaches the repositories its hooks come from (its hook environments in ~/.cache/pre-commit are not in the sandbox, and a sandbox must not write them)", hook, t.Top, rel, t.Tool)
			continue
		}
		var dirs []string
		secret := ""
		for _, x := range []string{t.Tool, t.Real} {
			if x == "" || shown(x) {
				continue
			}
			d, what := hookToolMountDir(x, home)
			if d == "" {
				secret = what
			} else if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		if secret != "" {
			p.warn("the %s hook of %s (%s) runs %s, which is not in the sandbox: commits inside fail there, or skip what it checks; it lies in a place that holds %s, which box does not offer to mount: commit on the host", hook, t.Top, rel, t.Tool, secret)
			continue
		}
		var entries []string
		for _, d := range dirs {
			if home != "" && within(d, home) {
				d = "~/" + strings.TrimPrefix(d, home+"/")
			}
			entries = append(entries, fmt.Sprintf("path = %q", d))
		}
		p.warn("the %s hook of %s (%s) runs %s, which is not in the sandbox: commits inside fail there, or skip what it checks; a profile's read-only [[mounts]] %s brings it in, or commit on the host", hook, t.Top, rel, t.Tool, strings.Join(entries, " and "))
	}
}

// hookToolMountDir is the directory to offer to mount for a tool at path: its
// directory, or the one above when that is a bin/ (a venv, a version manager's tree),
// unless that is the home or ~/.local (box's own data, everything else of yours); never
// one that is, holds or lies in a secret location (policy.SecretAt: ~/.cargo holds the
// crates.io token, hostile review, session 21), the tool itself then, or none ("" and
// what the place holds).
func hookToolMountDir(path, home string) (string, string) {
	var cands []string
	dir := filepath.Dir(path)
	if up := filepath.Dir(dir); filepath.Base(dir) == "bin" && up != home && up != filepath.Join(home, ".local") && up != "/" {
		cands = append(cands, up)
	}
	if dir != home {
		cands = append(cands, dir)
	}
	cands = append(cands, path) // the tool itself, never the whole home
	for _, c := range cands {
		if home == "" || policy.SecretAt(c, home) == "" {
			return c, ""
		}
	}
	return "", policy.SecretAt(path, home)
}

// namesLandlock: the request names the Landlock mode (the flag, else the profile's key).
func (r Request) namesLandlock() bool {
	mode := r.Isolation
	if mode == "" && r.Profile != nil {
		mode = r.Profile.Isolation
	}
	return Isolation(mode) == IsolationLandlock
}
