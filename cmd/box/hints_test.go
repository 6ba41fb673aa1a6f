package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

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

// TestHints: each typed error prints the hint its package used to word, byte for byte,
// with its message and exit code unchanged.
func TestHints(t *testing.T) {
	base := errors.New("boom")
	g := func(why host.GrantWhy) error {
		return &host.GrantError{Why: why, User: "alice", Project: "user-1001", Owner: "bob", Pool: "default", UsedBy: "/1.0/instances/x", Err: base}
	}
	cases := []struct {
		err  error
		hint string
		code int
	}{
		{&bwrap.TreeMovedError{Tree: "/p/w", Now: "/q/w"}, "another run's sandbox on a directory above may have moved it, or a link now stands in its place: look at what /p/w is now, then run box again from the directory you mean", exitFail},
		{&bwrap.GuardLockError{Dir: "/p/w", Err: base}, "box locks the working directory and the directories above it so that concurrent runs never follow what one sandbox swaps in: run it in a directory on a local filesystem that supports flock", exitFail},
		{&bwrap.MountHeldError{Mount: "/p/lib", Holder: "the run of pid 7"}, "wait for that run to end and run box again, or mount the directory read-only (mode = \"ro\") in this run's profile", exitFail},
		{&bwrap.MountAroundError{Mount: "/p", Workdir: "/p/w"}, "run box from /p itself, or mount only what the run must write", exitFail},
		{&bwrap.MountTableError{Err: base}, "box reads /proc/self/mountinfo to find the other names of the working directory: mount /proc where box runs (in a container, do not mask it)", exitFail},
		{&errs.UsageError{Err: &backend.NoSuchError{What: "profile", Err: base}}, "run 'box profiles' to list them", exitUsage},
		{&errs.UsageError{Err: &backend.NoSuchError{What: "template", Err: base}}, "run 'box templates' to list them", exitUsage},
		{&errs.UsageError{Err: &bwrap.StartError{Name: "w"}}, "box shell w or box exec w -- COMMAND launches its sandbox", exitUsage},
		{&bwrap.StopInUseError{Name: "w"}, "end the command running in it (exit its shell, or Ctrl-C its box exec)", exitFail},
		{&protect.ChangedError{Path: "/w/.envrc", Now: "a link"}, "another process is changing the working directory: stop it (another box run there?) and launch again", exitFail},
		{&policy.ProtectOptionError{Key: "protect_drop", Value: "x", Why: "no such entry"}, "name an entry as 'box run --dry-run' lists it (for example .vscode or git:hooks)", exitFail},
		{&policy.ProtectOptionError{Key: "protect_add", Value: "/x", Why: "absolute"}, "give a path relative to the project, for example .env or scripts/hooks", exitFail},
		{&bwrap.WiderError{Box: "b", Beyond: []string{"network full"}, Record: "/i/reach", Home: "/i/home"}, "launch it as before, or use a box made for the wider reach (box new); to widen this one, review its home (/i/home) and then remove /i/reach", exitFail},
		{&vm.OffStackError{Where: "instance", What: "device \"h\" (disk)"}, "box imports boxes shaped as box mints them: remove it on the exporting host ('box incus BOX -- config ...') and export again, or import with incus itself, outside box", exitFail},
		{&errs.UsageError{Err: vm.ErrHostPorts}, "to open a vm box's port on your loopback: box expose BOX PORT", exitUsage},
		{&errs.UsageError{Err: &vm.NoTerminalError{Verb: "shell", Name: "b"}}, "for a command without a terminal: box exec b -- COMMAND", exitUsage},
		{&errs.UsageError{Err: &vm.ProfileBackendError{Profile: "p", Backend: "bwrap"}}, "box new takes a profile whose backend is vm; bwrap profiles are for 'box run'", exitUsage},
		{&errs.UsageError{Err: &vm.NoImageError{Template: "t"}}, "run 'box templates' to list them; a vm template sets image and user", exitUsage},
		{bwrap.ErrRoot, "run box as an unprivileged user (for example: su - USER), or pass --allow-root to accept that exposure", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedAllowlist, Err: base}, "run 'box --check' to see what the sandbox needs here", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedInternet, Err: base}, "run 'box --check' to see what the internet tier needs here", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedLimits, Err: base}, "run 'box --check' to see which limit mechanism holds here", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedHelper, Err: base}, "install passt (pasta) or slirp4netns, then run 'box --check'", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedBwrap, Err: base}, "install it: apt-get install bubblewrap (then run 'box --check')", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedSandbox, Err: base}, "run 'box --check' to diagnose the sandbox", exitFail},
		{&bwrap.CheckError{Need: bwrap.NeedSandbox, Err: &bwrap.SetupEndedError{Err: base}}, "bwrap's line above names the path it could not set up: a link or a missing path there on this machine is the usual cause ('box run --dry-run' prints the argv box gives bwrap)", exitFail},
		{&bwrap.SetupEndedError{Err: &bwrap.CheckError{Need: bwrap.NeedInternet, Err: base}}, "bwrap's line above names the path it could not set up: a link or a missing path there on this machine is the usual cause ('box run --dry-run' prints the argv box gives bwrap)", exitFail},
		{&errs.UsageError{Err: &bwrap.EnvNameError{Err: base}}, "--env takes a name; the value comes from your environment", exitUsage},
		{&errs.UsageError{Err: &bwrap.AllowTierError{Tier: policy.NetInternet}}, "add --network allowlist (or use a profile with network = \"allowlist\")", exitUsage},
		{&errs.UsageError{Err: &bwrap.AllowPatternError{Err: base}}, "for example --allow github.com, --allow '*.githubusercontent.com', --allow api.anthropic.com:443 or --allow @github", exitUsage},
		{g(host.GrantPortNameProbe), "box grant checks the host firewall's kernel support first: run it as root", exitFail},
		{g(host.GrantNoPlacement), "build the isolation stack first: box setup-host", exitFail},
		{g(host.GrantPlacementNoNIC), "repair it: box setup-host (box doctor says what is wrong)", exitFail},
		{g(host.GrantNotAdmin), "box grant speaks to incusd as its administrator: run it as root, or as a member of incus-admin", exitFail},
		{g(host.GrantUIDReused), "the account's uid was reused: box revoke bob --purge first (or delete the project with incus)", exitFail},
		{g(host.GrantForeignProject), "box grant converges no instance it did not make: delete them (incus delete --project user-1001 NAME) or move them away, then run box grant again", exitFail},
		{g(host.GrantNetworkExists), "rename or delete that network, then run box grant again", exitFail},
		{g(host.GrantBridgeUsed), "box grant removes that bridge (it has none of box's isolation): detach it from /1.0/instances/x, then run box grant again", exitFail},
		{g(host.GrantRefused), "incusd refused box's restrictions for the project as it is: fix what it names, then run box grant again", exitFail},
		{g(host.RevokeNoGrant), "box doctor lists the grants of this host", exitFail},
		{g(host.RevokeNotGranted), "box revoke takes back only what box grant gave: run box grant alice first to take the project over, or remove it with incus", exitFail},
		{g(host.RevokeForeignInstances), "box deletes only its own boxes: delete those with incus (incus delete --project user-1001 NAME), then run box revoke --purge again", exitFail},
		{vm.ErrNoIncusClient, "install it (Debian 12: apt-get install -t bookworm-backports incus-client), or use the Nix package, which puts it on PATH", exitFail},
		{g(host.RevokeBuckets), "delete them with incus (incus storage bucket delete --project user-1001 default NAME), then run box revoke --purge again", exitFail},
	}
	for _, c := range cases {
		// Wrapped as the verbs wrap it: the message is the chain's, the hint the CLI's.
		err := fmt.Errorf("ctx: %w", c.err)
		var b bytes.Buffer
		code := report(&b, err)
		want := "box: error: ctx: " + c.err.Error() + "\nbox: hint: " + c.hint + "\n"
		if b.String() != want || code != c.code {
			t.Errorf("%T: exit %d, printed\n%s\nwant exit %d, printed\n%s", c.err, code, b.String(), c.code, want)
		}
	}
	// The post-run audit's hint, with and without a manifest; its exit code is its own.
	for _, m := range []string{"", "/q/manifest.json"} {
		var b bytes.Buffer
		code := report(&b, &bwrap.AuditError{Err: base, Code: 3, Manifest: m})
		want := "box: error: boom (the command exited 3)\nbox: hint: inspect the paths above before running git or opening the directory in an editor; the next box run in this directory audits again\n"
		if m != "" {
			want += "box: hint: what was moved aside is listed in " + m + "\n"
		}
		if b.String() != want || code != bwrap.ExitAudit {
			t.Errorf("audit: exit %d, printed\n%s\nwant\n%s", code, b.String(), want)
		}
	}
	// A hint added above the typed error is the one printed, as before; one below it is not.
	if got := errs.HintOf(cliHint(errs.WithHint(bwrap.ErrRoot, "outer"))); got != "outer" {
		t.Errorf("hint above: %q", got)
	}
	below := &bwrap.CheckError{Need: bwrap.NeedLimits, Err: errs.WithHint(base, "inner")}
	if got := errs.HintOf(cliHint(below)); got != "run 'box --check' to see which limit mechanism holds here" {
		t.Errorf("hint below: %q", got)
	}
}

// TestRefusalHints: the verbs' refusals print the message their backend printed and the
// hint it used to word, byte for byte (hints.go words it now).
func TestRefusalHints(t *testing.T) {
	gather := errors.New("cannot read /gone: no such file or directory")
	cases := []struct {
		err       error
		msg, hint string
	}{
		{&bwrap.NotFoundError{Name: "nope"}, `no bwrap box named "nope"`, "run 'box list' to see the boxes"},
		{&bwrap.NotFoundError{Name: "src", Clone: true}, `no bwrap box named "src"`, "run 'box list' to see the boxes; a vm box is cloned without --backend bwrap"},
		{&backend.TakenError{Name: "w", Err: errors.New(`a bwrap box named "w" already exists`)}, `a bwrap box named "w" already exists`, "pick another name; 'box list' shows the boxes"},
		{&backend.TakenError{Name: "w", Across: true, Err: errors.New(`an instance named "w" already exists in incusd`)}, `an instance named "w" already exists in incusd`, "pick another name: a name is unique across both backends ('box list' shows the boxes)"},
		{&backend.TakenError{Name: "w", Verb: "new", Err: errors.New(`an instance named "w" already exists`)}, `an instance named "w" already exists`, "pick another --name; 'box list' shows the boxes"},
		{&backend.TakenError{Name: "w", Verb: "new", Across: true, Err: errors.New(`a bwrap box named "w" already exists`)}, `a bwrap box named "w" already exists`, "pick another --name: a name is unique across both backends ('box list' shows the boxes)"},
		{errs.Usage("", "%w", &backend.PortArgError{Box: "w", What: "port", Err: errors.New(`"x" is not a port`)}), `port: "x" is not a port`, "for example: box expose w 3000"},
		{errs.Usage("", "%w", &vm.SessionNameError{Box: "w", Name: "a b"}), `session name "a b": want letters, digits, '-' and '_'`, "for example: box tmux w run-1"},
		{errs.Usage("", "%w", &vm.TemplateError{Err: errors.New(`no template "nope"`)}), `no template "nope"`, "run 'box templates' to list them"},
		{&backend.TakenError{Name: "w", Verb: "import", File: "w.tar.gz", Err: errors.New(`an instance named "w" already exists: nothing was imported`)}, `an instance named "w" already exists: nothing was imported`, "import it under another name: box import w.tar.gz --name NEW"},
		{&bwrap.ExposeError{Box: "w", Why: "port 3000 is not exposed", Unexposed: true}, "box w: port 3000 is not exposed", "box expose w --list shows what is"},
		{&bwrap.ExposeError{Box: "w", Why: "port 3000 is exposed already (at 127.0.0.1:3000)"}, "box w: port 3000 is exposed already (at 127.0.0.1:3000)", ""},
		{&bwrap.BoundError{Box: "w", Workdir: "/gone", Err: gather}, "box w: cannot read /gone: no such file or directory", "the box is bound to /gone; clone it elsewhere with box new --name NAME --from w --workdir DIR"},
		{&vm.GoneError{Name: "a"}, `box "a" went away while box was asking (renamed or deleted): nothing was done`, "'box list' shows the boxes now"},
		{&backend.NoSnapshotError{Box: "a", Name: "s"}, `box "a" has no snapshot "s"`, "box a has no snapshots: 'box snapshot a LABEL' takes one"},
		{&backend.NoSnapshotError{Box: "a", Name: "s", Have: []string{"one", "two"}}, `box "a" has no snapshot "s"`, "box a has: one, two"},
		{&backend.SnapshotExistsError{Box: "a", Name: "s"}, `box "a" already has a snapshot "s"`, "pick another label; 'box info a' lists them"},
		{&vm.StopError{Name: "a", Err: errors.New("timed out")}, "timed out", "box stop --force a stops it at once"},
		{&backend.RunningError{Name: "a", Verb: "rename", Why: "stop it first", Args: []string{"b"}}, `box "a" is running: stop it first`, "box stop a && box rename a b"},
		{&backend.RunningError{Name: "a", Verb: "export", Why: "export wants a settled disk, stop it first"}, `box "a" is running: export wants a settled disk, stop it first`, "box stop a && box export a"},
		{&vm.OpenError{Err: &fs.PathError{Op: "open", Path: "x.tar", Err: fs.ErrNotExist}}, "import: open x.tar: file does not exist", "name a file written by 'box export'"},
		{&vm.PlacementError{Profile: "box-net", Remote: "lab"}, `placement profile "box-net" does not exist on remote lab`, "build the stack there with 'box setup-host --remote lab', or name an existing profile in $BOX_PLACEMENT_PROFILE"},
		{&vm.PlacementError{Profile: "box-net"}, `placement profile "box-net" does not exist in incusd`, "set up the host with 'box setup-host', or name an existing profile in $BOX_PLACEMENT_PROFILE"},
		{&backend.StoppedError{Name: "a", State: "stopped"}, `box "a" is stopped`, "start it: box start a"},
		{&vm.DoorError{Box: "a", Port: 4000}, `box "a" has no door to port 4000`, "'box expose a --list' shows them"},
		{&vm.DoorError{Box: "a", Port: 3000, HostPort: 8080}, `box "a" already exposes port 3000 (at 127.0.0.1:8080)`, "box expose a --remove 3000 first"},
		{&dirbox.NotBoxError{Dir: "/d/w", Why: "no stamp"}, "/d/w is not a bwrap box (no stamp): box never touches a directory it did not make", "a box is stamped by 'box new' (" + dirbox.StampFile + "); look inside and move or remove the directory yourself"},
		{&dirbox.ExistsError{Name: "w"}, `a box named "w" already exists`, "pick another name; 'box list' shows the boxes"},
		{&dirbox.CopyError{Err: &fs.PathError{Op: "open", Path: "/h/x", Err: unix.EMFILE}}, "open /h/x: too many open files", "the box's home holds a directory tree deeper than box can walk within its open-file limit (ulimit -n): remove it from inside the box (box exec), or raise the limit"},
		{&dirbox.CopyError{Err: &fs.PathError{Op: "open", Path: "/h/x", Err: unix.EACCES}}, "open /h/x: permission denied", "a file or directory in the box's home is unreadable: make it readable from inside the box (box exec NAME -- chmod -R u+rX ~)"},
		{&dirbox.CopyError{Err: &fs.PathError{Op: "write", Path: "/h/x", Err: unix.ENOSPC}}, "write /h/x: no space left on device", "the disk is full: free space and try again (the partial copy was removed)"},
		{&dirbox.CopyError{Err: &fs.PathError{Op: "write", Path: "/h/x", Err: unix.EDQUOT}}, "write /h/x: disk quota exceeded", "the disk is full: free space and try again (the partial copy was removed)"},
		{&dirbox.CopyError{Err: &fs.PathError{Op: "open", Path: "/h/x", Err: unix.ELOOP}}, "open /h/x: too many levels of symbolic links", ""},
		{&vm.PortTakenError{Port: 8080, By: "something on this host listens on it"}, "host port 8080 is in use (something on this host listens on it)", "name another host port: box expose BOX PORT HOSTPORT"},
		{&vm.NotExportError{File: "x.tar", Why: "bad gzip: unexpected EOF"}, "x.tar is not a box export: bad gzip: unexpected EOF", "box import reads files written by 'box export' (or 'incus export', gzip or uncompressed)"},
		{&vm.NotFoundError{Name: "a"}, `no box named "a"`, "run 'box list' to see the boxes"},
		{&vm.LeaseError{Box: "w", Iface: "eth0", Timeout: time.Minute}, `box "w" is running but got no IPv4 lease on eth0 within 1m0s`, "the box is kept: check the host's network with 'box doctor'; 'box rm --force w' removes it"},
		{&vm.ProvisionError{Box: "w", Timeout: time.Minute, Stopped: true}, `cloud-init did not finish in box "w" within 1m0s: the box is incomplete, so it is not handed over; it is kept, stopped, for inspection`, "a first launch may install many packages: try a longer --timeout; to inspect: box start w && box incus w -- exec {} -- tail -50 /var/log/cloud-init-output.log; to remove: box rm --force w"},
		{&vm.ProvisionError{Box: "w", Stopped: true}, `cloud-init failed in box "w": the box is incomplete, so it is not handed over; it is kept, stopped, for inspection`, "a template's user-data is passed to cloud-init verbatim: fix it, or the host's network if packages could not be fetched ('box doctor'); to inspect: box start w && box incus w -- exec {} -- tail -50 /var/log/cloud-init-output.log; to remove: box rm --force w"},
		{&vm.RoleError{Template: "t", Role: "dev"}, `template "t" names a bootstrap role (BOX_BOOTSTRAP_ROLE=dev): box does not run rig roles after a mint`, "provision the box in the template's user-data (cloud-init runcmd), or run 'sudo rig bootstrap dev' in 'box shell' yourself; then drop the key"},
		{host.ErrPortNameFirewall, host.ErrPortNameFirewall.Error(), "load br_netfilter (modprobe br_netfilter; sysctl net.bridge.bridge-nf-call-iptables=1), or use a kernel with CONFIG_NFT_BRIDGE_META; --port-name-firewall grants anyway (box drill's grant:USER:port-name row then reports the gap)"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		code := report(&b, c.err)
		want := "box: error: " + c.msg + "\n"
		if c.hint != "" {
			want += "box: hint: " + c.hint + "\n"
		}
		wantCode := exitFail
		if errs.IsUsage(c.err) {
			wantCode = exitUsage
		}
		if b.String() != want || code != wantCode {
			t.Errorf("%T: exit %d, printed\n%s\nwant exit %d, printed\n%s", c.err, code, b.String(), wantCode, want)
		}
	}
}

// A warning's hint of several lines is said as an error's is, one "box: hint:" a line
// (field review, session 16: box new --backend bwrap where no user namespace can be had
// printed the user-namespace hint's later lines bare).
func TestWarnHintLines(t *testing.T) {
	var out strings.Builder
	e := &env{stderr: &out}
	w := &bwrap.UnstartableError{Name: "b", Err: &bwrap.UsernsError{UsernsDiagnosis: bwrap.UsernsDiagnosis{Cause: bwrap.UsernsSeccomp, Detail: "refused"}, Box: true}}
	warnf(e, w)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("want the warning and a hint of several lines:\n%s", out.String())
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "box: hint: ") {
			t.Errorf("a hint line without its prefix: %q\n%s", l, out.String())
		}
	}
}
