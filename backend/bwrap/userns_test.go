package bwrap

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Recorded facts of each case, as the reader sees them on such a machine.
var (
	uidMapDenied = "bwrap: setting up uid map: Permission denied\n"
	noPerm       = "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.\n"
	trialFailed  = errors.New("exit status 1")
	ubuntuLoaded = []string{"/usr/bin/man (enforce)", "unprivileged_userns (enforce)", "bwrap (unconfined)", "unpriv_bwrap (enforce)"}
)

func TestDiagnoseUserns(t *testing.T) {
	eperm := &fs.PathError{Op: "fork/exec", Path: "/usr/bin/bwrap", Err: syscall.EPERM}
	for _, c := range []struct {
		name   string
		f      UsernsFacts
		cause  UsernsCause
		detail []string // each must appear in Detail
		fix    string   // must appear in Fix
	}{
		{"works", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", TrialRan: true}, UsernsOK, []string{"a trial sandbox ran"}, ""},
		{"works under Ubuntu's restriction with box's profile", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", AppArmorRestrict: "1",
			AppArmor: true, Profiles: []string{"box-userns (unconfined)"}, BoxProfileAttach: "/usr/bin/bwrap", TrialRan: true},
			UsernsOK, []string{`profile "box-userns" grants /usr/bin/bwrap userns`}, ""},
		{"setuid bwrap where unprivileged namespaces are refused", UsernsFacts{Bwrap: "/usr/bin/bwrap", BwrapSetuid: true, MaxUserNS: "15000",
			Unshare: eperm, TrialRan: true}, UsernsOK, []string{"setuid bwrap makes them as root"}, ""},
		{"max_user_namespaces=0", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "0", Unshare: &fs.PathError{Err: syscall.ENOSPC},
			TrialRan: true, TrialErr: trialFailed, TrialStderr: noPerm}, UsernsMaxZero, []string{"user.max_user_namespaces=0"}, "sysctl -w user.max_user_namespaces="},
		{"count used up", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "3", Unshare: &fs.PathError{Err: syscall.ENOSPC},
			TrialRan: true, TrialErr: trialFailed}, UsernsMaxZero, []string{"user.max_user_namespaces=3 is used up"}, "raise user.max_user_namespaces"},
		// Field test (session 10): box in a user namespace made by bwrap --disable-userns,
		// as a CI runner's sandbox does; this namespace's own limit is the default, the
		// enclosing one's is used up and cannot be raised from inside.
		{"count used up in an enclosing namespace", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "2147483647", Unshare: &fs.PathError{Err: syscall.ENOSPC},
			TrialRan: true, TrialErr: trialFailed}, UsernsMaxZero, []string{"or an enclosing user namespace's limit", "--disable-userns"}, "cannot be raised from inside"},
		{"Debian's unprivileged_userns_clone=0", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", UnprivClone: "0", Unshare: eperm,
			TrialRan: true, TrialErr: trialFailed, TrialStderr: noPerm}, UsernsCloneOff, []string{"kernel.unprivileged_userns_clone=0"}, "unprivileged_userns_clone=1"},
		{"container: seccomp refuses CLONE_NEWUSER", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", SeccompMode: "2", Unshare: eperm,
			TrialRan: true, TrialErr: trialFailed, TrialStderr: noPerm}, UsernsSeccomp, []string{"EPERM", "seccomp filter", "a container?"}, "seccomp profile that allows user namespaces"},
		{"Ubuntu 24.04: restricted, no profile for this bwrap", UsernsFacts{Bwrap: "/nix/store/x-bubblewrap/bin/bwrap", MaxUserNS: "15000", AppArmorRestrict: "1",
			AppArmor: true, Profiles: ubuntuLoaded[:3], TrialRan: true, TrialErr: trialFailed, TrialStderr: uidMapDenied},
			UsernsAppArmorRestrict, []string{"apparmor_restrict_unprivileged_userns=1", "no profile for /nix/store/x-bubblewrap/bin/bwrap is loaded", "setting up uid map: Permission denied"},
			"grants userns to /nix/store/x-bubblewrap/bin/bwrap alone"},
		{"restricted, profiles unreadable", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", AppArmorRestrict: "1",
			AppArmor: true, ProfilesErr: fs.ErrPermission, TrialRan: true, TrialErr: trialFailed, TrialStderr: "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted\n"},
			UsernsAppArmorRestrict, []string{"is unknown (permission denied)", "RTM_NEWADDR"}, "not sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"},
		{"restricted, box's profile for another bwrap", UsernsFacts{Bwrap: "/usr/local/bin/bwrap", MaxUserNS: "15000", AppArmorRestrict: "1",
			AppArmor: true, Profiles: []string{"box-userns (unconfined)"}, BoxProfileAttach: "/usr/bin/bwrap", TrialRan: true, TrialErr: trialFailed, TrialStderr: uidMapDenied},
			UsernsAppArmorRestrict, []string{"no profile for /usr/local/bin/bwrap is loaded"}, ""},
		{"Ubuntu 25.04: bwrap's profile confines its children", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", AppArmorRestrict: "1",
			AppArmor: true, Profiles: ubuntuLoaded, TrialRan: true, TrialErr: trialFailed, TrialStderr: "bwrap: Can't mount proc on /newroot/proc: Permission denied\n"},
			UsernsAppArmorChildren, []string{`profile "bwrap" for /usr/bin/bwrap`, "unpriv_bwrap", "Can't mount proc"}, "apparmor=\"DENIED\""},
		{"restricted, refused at the clone", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", AppArmorRestrict: "1", Unshare: eperm,
			TrialRan: true, TrialErr: trialFailed, TrialStderr: noPerm}, UsernsAppArmorRestrict, []string{"no profile for /usr/bin/bwrap"}, ""},
		// Field test (session 19): box as a user in an unprivileged Incus container without
		// security.nesting (its /proc has the container's boot_id mounted over a file).
		{"container: /proc masked", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "2147483647", ProcCovers: []string{"/proc/sys/kernel/random/boot_id"},
			TrialRan: true, TrialErr: trialFailed, TrialStderr: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"},
			UsernsProcMasked, []string{"Can't mount proc", "/proc/sys/kernel/random/boot_id", "security.nesting"}, "incus config set NAME security.nesting=true"},
		{"proc refused, but a proc mount is fully visible", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000",
			TrialRan: true, TrialErr: trialFailed, TrialStderr: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"},
			UsernsUnknown, []string{"Can't mount proc"}, ""},
		{"unrecognised failure", UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", TrialRan: true, TrialErr: trialFailed, TrialStderr: "bwrap: something new\n"},
			UsernsUnknown, []string{"a trial sandbox failed: bwrap: something new"}, ""},
		{"no bwrap", UsernsFacts{MaxUserNS: "15000"}, UsernsUnknown, []string{"untested (no bwrap)"}, ""},
		{"no bwrap, clone refused", UsernsFacts{MaxUserNS: "15000", Unshare: eperm}, UsernsSeccomp, []string{"EPERM"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := DiagnoseUserns(c.f)
			if d.Cause != c.cause {
				t.Fatalf("cause %v, want %v (%s)", d.Cause, c.cause, d.Detail)
			}
			for _, w := range c.detail {
				if !strings.Contains(d.Detail, w) {
					t.Errorf("detail %q lacks %q", d.Detail, w)
				}
			}
			if !strings.Contains(d.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", d.Fix, c.fix)
			}
			if d.OK() != (c.cause == UsernsOK) || (c.cause != UsernsOK && d.Fix == "") {
				t.Errorf("OK()=%v, fix %q", d.OK(), d.Fix)
			}
		})
	}
}

func TestUsernsCauseNames(t *testing.T) {
	for c := UsernsOK; c <= UsernsProcMasked; c++ {
		if c.String() == "" {
			t.Errorf("cause %d has no name", c)
		}
	}
}

// procCovers, on mount tables recorded in unprivileged Incus containers (session 19):
// without security.nesting the only proc has boot_id mounted over a file; with it, LXC
// adds a fully visible proc at /dev/.lxc/proc and the sandbox starts.
func TestProcCovers(t *testing.T) {
	plain := `80 78 0:44 / /proc rw,nosuid,nodev,noexec,relatime shared:18 - proc proc rw
81 78 0:45 / /sys rw,relatime shared:19 - sysfs sysfs rw
100 80 0:43 /.lxc-boot-id /proc/sys/kernel/random/boot_id ro,nosuid,nodev,noexec,relatime shared:4 - tmpfs none rw,size=492k,mode=755
53 81 0:50 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:27 - tmpfs tmpfs ro,size=4096k
`
	nested := plain + "467 457 0:63 / /dev/.lxc/proc rw,relatime shared:222 - proc proc rw\n"
	if got := procCovers([]byte(plain)); !slices.Equal(got, []string{"/proc/sys/kernel/random/boot_id"}) {
		t.Errorf("without nesting: %q", got)
	}
	if got := procCovers([]byte(nested)); got != nil {
		t.Errorf("with a fully visible proc: %q", got)
	}
	if got := procCovers([]byte("22 1 0:5 / /proc rw - proc proc rw\n")); got != nil {
		t.Errorf("a host's plain /proc: %q", got)
	}
}

func TestProfileAttachment(t *testing.T) {
	if got := ProfileAttachment("# x\nabi <abi/4.0>,\nprofile box-userns /usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n"); got != "/usr/bin/bwrap" {
		t.Errorf("got %q", got)
	}
	if got := ProfileAttachment("profile foo {\n}\n"); got != "" {
		t.Errorf("got %q", got)
	}
}

// usernsBefore refuses only what is certain: a recorded max_user_namespaces=0.
func TestUsernsBefore(t *testing.T) {
	dir := t.TempDir()
	old := sysctlMaxUserNS
	t.Cleanup(func() { sysctlMaxUserNS = old })
	sysctlMaxUserNS = filepath.Join(dir, "max")
	os.WriteFile(sysctlMaxUserNS, []byte("0\n"), 0o644)
	err := usernsBefore("/usr/bin/bwrap", readUsernsSysctls())
	var ue *UsernsError
	if !errors.As(err, &ue) || ue.Cause != UsernsMaxZero {
		t.Fatalf("got %v, want the max_user_namespaces cause", err)
	}
	if !strings.HasPrefix(err.Error(), "the sandbox cannot start: user namespaces are disabled") {
		t.Errorf("message %q", err)
	}
	os.WriteFile(sysctlMaxUserNS, []byte("15000\n"), 0o644)
	if f := readUsernsSysctls(); f.SeccompMode != "2" {
		if err := usernsBefore("/usr/bin/bwrap", f); err != nil {
			t.Errorf("a launch with namespaces on was refused: %v", err)
		}
	}
}

// The key of a healthy launch is the one taken before it: read again after the launch,
// /proc/self/status's seccomp mode can be 2 (the main thread may be the one that put
// the unix socket filter on itself to start bwrap), and the flipped key made the next
// launch pay the whole trial diagnosis (a bwrap --version and a trial sandbox). Seen on
// main: 5 rewrites of the cache in 40 runs of box run.
func TestUsernsKeyTakenBeforeLaunch(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	for _, v := range []*string{&sysctlMaxUserNS, &sysctlUnprivClone, &sysctlAARestrict, &procSelfStatus} {
		old := *v
		t.Cleanup(func() { *v = old })
	}
	sysctlMaxUserNS, sysctlUnprivClone, sysctlAARestrict = filepath.Join(dir, "max"), filepath.Join(dir, "clone"), filepath.Join(dir, "aa")
	procSelfStatus = filepath.Join(dir, "status")
	os.WriteFile(sysctlMaxUserNS, []byte("15000\n"), 0o644)
	status := func(mode string) { os.WriteFile(procSelfStatus, []byte("Name:\tbox\nSeccomp:\t"+mode+"\n"), 0o644) }
	bin := filepath.Join(dir, "bwrap")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)

	status("0")
	home := filepath.Join(dir, "home") // CheckHome runs after a healthy choice
	p := &Plan{Isolation: IsolationPlan{Mode: IsolationBwrap}, Spec: Spec{Home: home}}
	if err := p.chooseIsolation(bin, io.Discard); err != nil {
		t.Fatal(err)
	}
	if p.usernsKey == "" || !strings.HasSuffix(p.usernsKey, "\"0\"\n") {
		t.Fatalf("key before the launch %q", p.usernsKey)
	}
	status("2") // the launch left the main thread under the socket filter
	if err := usernsAfter(bin, p.usernsKey, 0); err != nil {
		t.Fatal(err)
	}
	status("0")
	next := &Plan{Isolation: IsolationPlan{Mode: IsolationBwrap}, Spec: Spec{Home: home}}
	if err := next.chooseIsolation(bin, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !usernsKnownHealthy(next.usernsKey) {
		b, _ := os.ReadFile(usernsHealthyFile())
		t.Fatalf("the next launch with the same facts is not known healthy: remembered %q, its key %q", b, next.usernsKey)
	}
}

// The healthy-launch record is the operator's cache, never a path in the working
// directory: with HOME relative (HOME=rel, as a misconfigured CI job or container sets
// it) os.UserCacheDir answered rel/.cache, and box wrote rel/.cache/box/userns-ok into
// the directory it was run in, the tree the sandbox writes (field review, session 16).
// An XDG_CACHE_HOME that is not absolute is ignored, as the XDG rule says.
func TestUsernsHealthyFileNeverRelative(t *testing.T) {
	for _, env := range [][2]string{{"HOME", "rel"}, {"XDG_CACHE_HOME", "rel/cache"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv("XDG_CACHE_HOME", "")
			t.Setenv(env[0], env[1])
			p := usernsHealthyFile()
			if p != "" && !filepath.IsAbs(p) {
				t.Fatalf("%s=%s: the record is at %q, relative to the working directory", env[0], env[1], p)
			}
		})
	}
}
