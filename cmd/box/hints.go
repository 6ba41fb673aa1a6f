package main

import (
	"errors"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/errs"
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

// hintFor is the hint for the first typed error in err's chain, and that error.
func hintFor(err error) (string, error) {
	var ce *bwrap.CheckError
	var ge *host.GrantError
	var env *bwrap.EnvNameError
	var at *bwrap.AllowTierError
	var ap *bwrap.AllowPatternError
	var ae *bwrap.AuditError
	var ue *bwrap.UsernsError
	var te *bwrap.TerminalError
	var pt *bwrap.PortsTierError
	var pk *bwrap.PortTakenError
	switch {
	case errors.As(err, &te):
		return terminalHint(te), te
	case errors.As(err, &pt):
		return "in tier full a server in the sandbox is on the host's own ports already; to forward only what you name, use --network none, allowlist or internet", pt
	case errors.As(err, &pk):
		return "another program holds that host port: publish on another one, for example --publish 8081:PORT (host:sandbox)", pk
	case errors.As(err, &ue):
		return usernsErrHint(ue) + "\n" + landlockOptIn, ue // setupuserns.go
	case errors.As(err, &ae):
		return auditHint(ae), ae
	case errors.Is(err, bwrap.ErrRoot):
		return "run box as an unprivileged user (for example: su - USER), or pass --allow-root to accept that exposure", bwrap.ErrRoot
	case errors.As(err, &ce):
		return checkHint(ce.Need), ce
	case errors.As(err, &ge):
		return grantHint(ge), ge
	case errors.As(err, &env):
		return "--env takes a name; the value comes from your environment", env
	case errors.As(err, &at):
		return "add --network allowlist (or use a profile with network = \"allowlist\")", at
	case errors.Is(err, vm.ErrNoIncusClient):
		return "install it (Debian 12: apt-get install -t bookworm-backports incus-client), or use the Nix package, which puts it on PATH", vm.ErrNoIncusClient
	case errors.As(err, &ap):
		return "for example --allow github.com, --allow '*.githubusercontent.com', --allow api.anthropic.com:443 or --allow @github", ap
	}
	return "", nil
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
const landlockOptIn = `or opt into the Landlock mode, which needs no user namespace: box run --isolation landlock ` +
	`(for a profile, once: isolation = "auto" runs it only where bwrap cannot start). ` +
	`It keeps your home and secrets unreadable and writes to the working and instance directories, tier none only; ` +
	`it does NOT hold a private /tmp or /proc (your other processes are visible), the internet and allowlist tiers, ` +
	`read-only protected paths inside the working directory, or cgroup limits ` +
	`(box run --isolation landlock --dry-run lists every item; docs/bwrap.md)`

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
