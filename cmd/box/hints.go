package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// cliHint gives the typed errors of the packages box calls their hints: a hint names
// box's verbs and flags, which only the CLI knows. A hint already carried above the typed
// error (one the CLI or the package added on top) is the one report prints, so it stays.
func cliHint(err error) error {
	hint, typed := hintFor(err)
	if hint == "" || hintAbove(err, typed) {
		return err
	}
	return errs.WithHint(err, hint)
}

// hintFor is the hint of the first row of hints that err's chain matches, and the typed
// error that matched.
func hintFor(err error) (string, error) {
	for _, row := range hints {
		if h, typed := row(err); typed != nil {
			return h, typed
		}
	}
	return "", nil
}

// as is the row of hints for the type T, to the one for T with a fixed hint, is the one
// for the sentinel target.
func as[T error](word func(T) string) func(error) (string, error) {
	return func(err error) (string, error) {
		var t T
		if errors.As(err, &t) {
			return word(t), t
		}
		return "", nil
	}
}

func to[T error](h string) func(error) (string, error) { return as(func(T) string { return h }) }

func is(target error, h string) func(error) (string, error) {
	return func(err error) (string, error) {
		if errors.Is(err, target) {
			return h, target
		}
		return "", nil
	}
}

// hints: the verbs' refusals come first, since some wrap another package's error.
var hints = []func(error) (string, error){
	as(takenHint),
	as(noBoxHint),
	as(func(e *backend.UnsupportedError) string {
		return map[string]string{
			"export": "a bwrap box is a directory: snapshot it (box snapshot) or clone it (box new --from)",
			"incus":  "box shell, box exec, box snapshot... work on it",
		}[e.Verb]
	}),
	as(func(e *vm.SharedIDsError) string {
		return "give it a range of its own while it is stopped: box stop " + e.Name + " && box incus " + e.Name + " -- config set {} security.idmap.isolated=true && box start " + e.Name
	}),
	as(func(e *backend.PortArgError) string { return "for example: box expose " + e.Box + " 3000" }),
	as(func(e *vm.SessionNameError) string { return "for example: box tmux " + e.Box + " run-1" }),
	to[*vm.TemplateError]("run 'box templates' to list them"),
	is(vm.ErrHostPorts, "to open a vm box's port on your loopback: box expose BOX PORT"),
	as(func(e *vm.NoTerminalError) string {
		return "for a command without a terminal: box exec " + e.Name + " -- COMMAND"
	}),
	to[*vm.ProfileBackendError]("box new takes a profile whose backend is vm; bwrap profiles are for 'box run'"),
	to[*vm.NoImageError]("run 'box templates' to list them; a vm template sets image and user"),
	to[*protect.ChangedError]("another process is changing the working directory: stop it (another box run there?) and launch again"),
	as(func(e *policy.ProtectOptionError) string {
		if e.Key == "protect_drop" {
			return "name an entry as 'box run --dry-run' lists it (for example .vscode or git:hooks)"
		}
		return "give a path relative to the project, for example .env or scripts/hooks"
	}),
	as(func(e *bwrap.WiderError) string {
		return fmt.Sprintf("launch it as before, or use a box made for the wider reach (box new); to widen this one, review its home (%s) and then remove %s", e.Home, e.Record)
	}),
	to[*vm.OffStackError]("box imports boxes shaped as box mints them: remove it on the exporting host ('box incus BOX -- config ...') and export again, or import with incus itself, outside box"),
	as(func(e *bwrap.StartError) string {
		return "box shell " + e.Name + " or box exec " + e.Name + " -- COMMAND launches its sandbox"
	}),
	to[*bwrap.StopInUseError]("end the command running in it (exit its shell, or Ctrl-C its box exec)"),
	as(func(e *backend.NoSuchError) string { return "run 'box " + e.What + "s' to list them" }),
	as(func(e *backend.UnreadableError) string {
		return "box reads its " + e.What + "s from " + e.Dir + " ($XDG_CONFIG_HOME/box, else ~/.config/box): make it readable to you (chmod u+rx), or set XDG_CONFIG_HOME to a directory you own"
	}),
	as(func(e *backend.RunningError) string {
		return "box stop " + e.Name + " && box " + strings.Join(append([]string{e.Verb, e.Name}, e.Args...), " ")
	}),
	as(func(e *backend.StoppedError) string { return "start it: box start " + e.Name }),
	as(func(e *backend.SnapshotExistsError) string {
		return "pick another label; 'box info " + e.Box + "' lists them"
	}),
	as(func(e *backend.NoSnapshotError) string {
		if len(e.Have) == 0 {
			return fmt.Sprintf("box %s has no snapshots: 'box snapshot %s LABEL' takes one", e.Box, e.Box)
		}
		return fmt.Sprintf("box %s has: %s", e.Box, strings.Join(e.Have, ", "))
	}),
	as(func(e *bwrap.NotFoundError) string {
		if e.Clone {
			return "run 'box list' to see the boxes; a vm box is cloned without --backend bwrap"
		}
		return "run 'box list' to see the boxes"
	}),
	as(func(e *bwrap.BoundError) string {
		return "the box is bound to " + e.Workdir + "; clone it elsewhere with box new --name NAME --from " + e.Box + " --workdir DIR"
	}),
	as(func(e *bwrap.ExposeError) string {
		return map[bool]string{true: "box expose " + e.Box + " --list shows what is"}[e.Unexposed]
	}),
	as(func(*dirbox.NotBoxError) string {
		return "a box is stamped by 'box new' (" + dirbox.StampFile + "); look inside and move or remove the directory yourself"
	}),
	to[*dirbox.ExistsError]("pick another name; 'box list' shows the boxes"),
	as(func(e *dirbox.RemainsError) string {
		return "remove it yourself: chmod -R u+rwx " + e.Dir + " && rm -rf " + e.Dir
	}),
	as(func(e *dirbox.SessionBusyError) string {
		return "end that session first; for several shells in one box, run tmux or screen inside one session (box exec -y " + e.Name + " -- tmux)"
	}),
	as(copyHint),
	to[*vm.PortTakenError]("name another host port: box expose BOX PORT HOSTPORT"),
	to[*vm.NotExportError]("box import reads files written by 'box export' (or 'incus export', gzip or uncompressed)"),
	to[*vm.NotFoundError]("run 'box list' to see the boxes"),
	as(func(e *vm.LeaseError) string {
		return "the box is kept: check the host's network with 'box doctor'; 'box rm --force " + e.Box + "' removes it"
	}),
	as(provisionHint),
	as(func(e *vm.RoleError) string {
		return "provision the box in the template's user-data (cloud-init runcmd), or run 'sudo rig bootstrap " + e.Role + "' in 'box shell' yourself; then drop the key"
	}),
	to[*vm.GoneError]("'box list' shows the boxes now"),
	as(func(e *vm.StopError) string { return "box stop --force " + e.Name + " stops it at once" }),
	to[*vm.OpenError]("name a file written by 'box export'"),
	as(func(e *vm.PlacementError) string {
		if e.Remote != "" {
			return "build the stack there with 'box setup-host --remote " + e.Remote + "', or name an existing profile in $" + vm.PlacementEnv
		}
		return "set up the host with 'box setup-host', or name an existing profile in $" + vm.PlacementEnv
	}),
	as(func(e *vm.DoorError) string {
		if e.HostPort > 0 {
			return fmt.Sprintf("box expose %s --remove %d first", e.Box, e.Port)
		}
		return "'box expose " + e.Box + " --list' shows them"
	}),
	is(host.ErrNotRoot, "sudo box setup-host"),
	is(host.ErrPortNameFirewall, "load br_netfilter (modprobe br_netfilter; sysctl net.bridge.bridge-nf-call-iptables=1), or use a kernel with CONFIG_NFT_BRIDGE_META; --port-name-firewall grants anyway (box drill's grant:USER:port-name row then reports the gap)"),
	as(terminalHint),
	to[*bwrap.PortsTierError]("in tier full a server in the sandbox is on the host's own ports already; to forward only what you name, use --network " + policy.TierListWhere(policy.Tier.OwnNetNS, "or")),
	to[*bwrap.PortTakenError]("another program holds that host port: publish on another one, for example --publish 8081:PORT (host:sandbox)"),
	as(func(e *bwrap.UsernsError) string {
		if e.Box {
			return usernsErrHint(e) + "\n" + landlockNoBox
		}
		return usernsErrHint(e) + "\n" + landlockOptIn
	}), // setupuserns.go
	as(auditHint),
	as(func(e *bwrap.DataDirError) string {
		const hint = "to a directory of your own you can write, for example: export HOME=/tmp/home-$(id -u); mkdir -p \"$HOME\" (a container gives a user without a passwd entry HOME=/)"
		// XDG_DATA_HOME moves box's state, not the home: a HOME the sandbox cannot
		// hide (/, a system directory) is refused next (field review, session 20).
		if h := os.Getenv("HOME"); h != "" && bwrap.CheckHome(h) != nil {
			return "set HOME " + hint
		}
		return "set HOME (or XDG_DATA_HOME) " + hint
	}),
	to[*bwrap.NofileError]("raise it where box is started: ulimit -n 1024 (as root, or in the container's settings: docker run --ulimit nofile=1024:1024; systemd LimitNOFILE=)"),
	as(func(e *bwrap.TreeMovedError) string {
		return "another run's sandbox on a directory above may have moved it, or a link now stands in its place: look at what " + e.Tree + " is now, then run box again from the directory you mean"
	}),
	to[*bwrap.MountHeldError]("wait for that run to end and run box again, or mount the directory read-only (mode = \"ro\") in this run's profile"),
	as(func(e *bwrap.MountAroundError) string {
		return "run box from " + e.Mount + " itself, or mount only what the run must write"
	}),
	to[*bwrap.GuardLockError]("box locks the working directory and the directories above it so that concurrent runs never follow what one sandbox swaps in: run it in a directory on a local filesystem that supports flock"),
	to[*bwrap.MountTableError]("box reads /proc/self/mountinfo to find the other names of the working directory: mount /proc where box runs (in a container, do not mask it)"),
	as(func(e *bwrap.EtcMissingError) string {
		return "create it as root: touch " + e.Path + " (an empty file will do), then run box again"
	}),
	to[*bwrap.EmptyPathError]("set it, for example: export PATH=/usr/local/bin:/usr/bin:/bin"),
	to[*bwrap.NoHomeError]("set HOME to a directory of your own, for example: export HOME=/tmp/home-$(id -u); mkdir -p \"$HOME\""),
	to[*bwrap.HomeError]("set HOME to a directory of your own, for example: export HOME=/tmp/home-$(id -u); mkdir -p \"$HOME\" (a container gives a user without a passwd entry HOME=/); or run in the Landlock mode, which mounts no home (--isolation landlock)"),
	is(bwrap.ErrRoot, "run box as an unprivileged user (for example: su - USER), or pass --allow-root to accept that exposure"),
	to[*bwrap.SetupEndedError]("bwrap's line above names the path it could not set up: a link or a missing path there on this machine is the usual cause ('box run --dry-run' prints the argv box gives bwrap)"),
	as(func(e *bwrap.CheckError) string { return checkHint(e.Need) }),
	as(grantHint),
	to[*bwrap.EnvNameError]("--env takes a name; the value comes from your environment"),
	to[*bwrap.AllowTierError]("add --network allowlist (or use a profile with network = \"allowlist\")"),
	as(func(e *host.NoIncusError) string {
		if e.Installed {
			return "start incusd and run 'sudo box setup-host' once, or use the bwrap backend (box run, box new --backend bwrap; box --check says whether this machine can run it)"
		}
		return "install Incus and run 'sudo box setup-host', or use the bwrap backend (box run, box new --backend bwrap; box --check says whether this machine can run it)"
	}),
	to[*bwrap.NestedError]("the command runs sandboxed already: run it directly (unset BOX_SANDBOX if this is not a box sandbox)"),
	is(vm.ErrNoIncusClient, "install it (Debian 12: apt-get install -t bookworm-backports incus-client), or use the Nix package, which puts it on PATH"),
	to[*bwrap.AllowPatternError]("for example --allow github.com, --allow '*.githubusercontent.com', --allow api.anthropic.com:443 or --allow @github"),
}

// copyHint: what to do from inside the box when its own files fail a copy.
func copyHint(e *dirbox.CopyError) string {
	switch {
	case errors.Is(e.Err, unix.EMFILE), errors.Is(e.Err, unix.ENFILE):
		return "the box's home holds a directory tree deeper than box can walk within its open-file limit (ulimit -n): remove it from inside the box (box exec), or raise the limit"
	case errors.Is(e.Err, unix.EACCES):
		return "a file or directory in the box's home is unreadable: make it readable from inside the box (box exec NAME -- chmod -R u+rX ~)"
	case errors.Is(e.Err, unix.ENOSPC), errors.Is(e.Err, unix.EDQUOT):
		return "the disk is full: free space and try again (the partial copy was removed)"
	}
	return ""
}

// provisionHint: how to look into a box whose cloud-init failed, and how to remove it.
func provisionHint(e *vm.ProvisionError) string {
	fix := "a template's user-data is passed to cloud-init verbatim: fix it, or the host's network if packages could not be fetched ('box doctor')"
	if e.Timeout > 0 {
		fix = "a first launch may install many packages: try a longer --timeout"
	}
	return fmt.Sprintf("%s; to inspect: box start %s && box incus %s -- exec {} -- tail -50 %s; to remove: box rm --force %s",
		fix, e.Box, e.Box, vm.CloudInitLog, e.Box)
}

// noBoxHint: the closest names, and why the vm boxes may not have been among them.
func noBoxHint(e *backend.NoBoxError) string {
	hint := "'box list' shows your boxes; 'box new --name NAME' mints one"
	if len(e.Closest) > 0 {
		hint = "did you mean '" + strings.Join(e.Closest, "' or '") + "'? ('box list' shows every box)"
	}
	if e.VMErr != nil {
		hint += fmt.Sprintf("\nvm boxes could not be checked (%v): if %s is one, start incusd ('box doctor' checks the host)", e.VMErr, e.Name)
	}
	return hint
}

// takenHint: where to look for a free name, in the words of the verb that wanted it.
func takenHint(e *backend.TakenError) string {
	switch {
	case e.File != "":
		return "import it under another name: box import " + e.File + " --name NEW"
	case e.Verb == "new" && e.Across:
		return "pick another --name: a name is unique across both backends ('box list' shows the boxes)"
	case e.Verb == "new":
		return "pick another --name; 'box list' shows the boxes"
	case e.Across:
		return "pick another name: a name is unique across both backends ('box list' shows the boxes)"
	}
	return "pick another name; 'box list' shows the boxes"
}

// terminalHint: the fix for a sandbox terminal box could not make; without a terminal
// on box's stdio (box run ... < /dev/null > log, box exec without -t) none is needed.
func terminalHint(e *bwrap.TerminalError) string {
	const without = "; or run the command without a terminal: its input and output not on one (box run ... </dev/null 2>&1 | cat), box exec without -t"
	switch e.Cause {
	case bwrap.TerminalExhausted:
		return "close terminals you no longer use, or raise the limit: sudo sysctl kernel.pty.max=8192 (a container's /dev/pts may have its own max=)" + without
	case bwrap.TerminalMissing:
		return "mount the pseudo-terminal filesystem: sudo mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts, with /dev/ptmx a link to pts/ptmx" + without
	case bwrap.TerminalDenied:
		return "/dev/ptmx must be readable and writable by every user (crw-rw-rw-, as ls -l /dev/ptmx shows); a security module (SELinux, AppArmor) may refuse it too" + without
	case bwrap.TerminalBusy:
		return "a program put the terminal in exclusive mode (TIOCEXCL) and holds it; end that program, or open a new terminal" + without
	}
	return "box allocates a pseudo-terminal for a command on a terminal" + without
}

// landlockOptIn: where bwrap cannot start, the mode that needs no namespace, by name.
var landlockOptIn = landlockOptInFor("box run")

// landlockOptInFor is landlockOptIn in the words of the verb that could not start (box
// drill drills the mode with its own --isolation: field review, session 16, found its
// hint naming box run).
func landlockOptInFor(verb string) string {
	return `or opt into the Landlock mode, which needs no user namespace: ` + verb + ` --isolation landlock ` +
		`(for a profile, once: isolation = "auto" runs it only where bwrap cannot start). ` +
		`It keeps your home and secrets unreadable and writes to the working and instance directories, tier none only; ` +
		`it does NOT hold a private /tmp or /proc (your other processes are visible), the internet and allowlist tiers, ` +
		`read-only protected paths inside the working directory, or cgroup limits ` +
		`(box run --isolation landlock --dry-run lists every item; docs/bwrap.md)`
}

// landlockNoBox: a bwrap box keeps its own home at your home's path, which needs a mount
// namespace; the Landlock mode runs box run only.
const landlockNoBox = `a bwrap box cannot run in the Landlock mode (its home needs a mount namespace); ` +
	`where no user namespace can be had, work with box run --isolation landlock in the box's working directory (docs/bwrap.md)`

func auditHint(e *bwrap.AuditError) string {
	h := "inspect the paths above before running git or opening the directory in an editor; the next box run in this directory audits again"
	if e.Manifest != "" {
		h += "\nwhat was moved aside is listed in " + e.Manifest
	}
	return h
}

func checkHint(n bwrap.Need) string {
	switch n {
	case bwrap.NeedAllowlist:
		return "run 'box --check' to see what the sandbox needs here"
	case bwrap.NeedInternet:
		return "run 'box --check' to see what the internet tier needs here"
	case bwrap.NeedLimits:
		return "run 'box --check' to see which limit mechanism holds here"
	case bwrap.NeedHelper:
		return "install passt (pasta) or slirp4netns, then run 'box --check'"
	case bwrap.NeedBwrap:
		return "install it: apt-get install bubblewrap (then run 'box --check')"
	}
	return "run 'box --check' to diagnose the sandbox"
}

func grantHint(e *host.GrantError) string {
	switch e.Why {
	case host.GrantPortNameProbe:
		return "box grant checks the host firewall's kernel support first: run it as root"
	case host.GrantNoPlacement:
		return "build the isolation stack first: box setup-host"
	case host.GrantPlacementNoNIC:
		return "repair it: box setup-host (box doctor says what is wrong)"
	case host.GrantNotAdmin:
		return "box grant speaks to incusd as its administrator: run it as root, or as a member of incus-admin"
	case host.GrantUIDReused:
		return "the account's uid was reused: box revoke " + e.Owner + " --purge first (or delete the project with incus)"
	case host.GrantForeignProject:
		return "box grant converges no instance it did not make: delete them (incus delete --project " + e.Project + " NAME) or move them away, then run box grant again"
	case host.GrantNetworkExists:
		return "rename or delete that network, then run box grant again"
	case host.GrantBridgeUsed:
		return "box grant removes that bridge (it has none of box's isolation): detach it from " + e.UsedBy + ", then run box grant again"
	case host.GrantRefused:
		return "incusd refused box's restrictions for the project as it is: fix what it names, then run box grant again"
	case host.RevokeNoGrant:
		return "box doctor lists the grants of this host"
	case host.RevokeNotGranted:
		return "box revoke takes back only what box grant gave: run box grant " + e.User + " first to take the project over, or remove it with incus"
	case host.RevokeForeignInstances:
		return "box deletes only its own boxes: delete those with incus (incus delete --project " + e.Project + " NAME), then run box revoke --purge again"
	case host.RevokeBuckets:
		return "delete them with incus (incus storage bucket delete --project " + e.Project + " " + e.Pool + " NAME), then run box revoke --purge again"
	}
	return ""
}

// hintAbove reports whether an error wrapping typed in err's chain carries a hint of its
// own (a usage error that only passes on the hint below it does not).
func hintAbove(err, typed error) bool {
	for e := err; e != nil && e != typed; e = errors.Unwrap(e) {
		h, ok := e.(interface{ Hint() string })
		if !ok || h.Hint() == "" {
			continue
		}
		if u := errors.Unwrap(e); u != nil && h.Hint() == errs.HintOf(u) {
			continue // passes on the hint below
		}
		return true
	}
	return false
}
