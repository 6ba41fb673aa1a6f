package bwrap

// Why a sandbox cannot start: the user-namespace cases (Ubuntu's AppArmor restriction, a
// profile confining bwrap's children, a container's seccomp filter, a zero namespace
// limit). Diagnose is pure: the facts come from ReadUsernsFacts (userns_read.go), so each
// case is table-tested from recorded facts.

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// UsernsCause is why bwrap cannot get the user namespace it needs.
type UsernsCause int

const (
	UsernsOK               UsernsCause = iota // a trial sandbox ran
	UsernsUnknown                             // the trial failed for a reason box does not recognise
	UsernsMaxZero                             // user.max_user_namespaces=0 (or the count is used up)
	UsernsCloneOff                            // kernel.unprivileged_userns_clone=0 (Debian's older kernels)
	UsernsSeccomp                             // a seccomp filter refuses unshare(CLONE_NEWUSER): a container
	UsernsAppArmorRestrict                    // kernel.apparmor_restrict_unprivileged_userns=1, no profile grants this bwrap userns
	UsernsAppArmorChildren                    // a profile for this bwrap is loaded and confines what it runs
	UsernsProcMasked                          // the namespace is made, but a container's masked /proc forbids mounting a new one
)

// usernsCauseNames is an array, laid out as data: a map was built at every start of box
// (issue 24).
var usernsCauseNames = [...]string{
	UsernsOK: "ok", UsernsUnknown: "unknown", UsernsMaxZero: "max-user-namespaces",
	UsernsCloneOff: "unprivileged-userns-clone", UsernsSeccomp: "seccomp",
	UsernsAppArmorRestrict: "apparmor-restrict", UsernsAppArmorChildren: "apparmor-children",
	UsernsProcMasked: "proc-masked",
}

// String is the cause's stable name (box --check --json).
func (c UsernsCause) String() string {
	if uint(c) < uint(len(usernsCauseNames)) {
		return usernsCauseNames[c]
	}
	return ""
}

// BoxProfileName is the AppArmor profile box setup-userns loads (host/apparmor.go).
const BoxProfileName = "box-userns"

// UsernsFacts are what Diagnose reads, recorded by ReadUsernsFacts.
type UsernsFacts struct {
	Bwrap       string // resolved path of the bwrap box uses ("" none found)
	BwrapSetuid bool
	// The sysctls as read ("" when the file is absent or unreadable).
	MaxUserNS        string // /proc/sys/user/max_user_namespaces (per user namespace)
	UnprivClone      string // /proc/sys/kernel/unprivileged_userns_clone (Debian-patched kernels)
	AppArmorRestrict string // /proc/sys/kernel/apparmor_restrict_unprivileged_userns (Ubuntu)
	// SeccompMode is the Seccomp: field of box's own /proc/self/status ("2": box itself
	// already runs under a filter, as in a container).
	SeccompMode string
	// AppArmor: /sys/kernel/security/apparmor exists. Profiles are the names of the
	// loaded profiles (its profiles file, "name (mode)" per line), ProfilesErr why they
	// could not be read (it needs root on most systems).
	AppArmor    bool
	Profiles    []string
	ProfilesErr error
	// BoxProfileAttach is the binary box's own installed profile attaches to ("" none).
	BoxProfileAttach string
	// Unshare is the outcome of unshare(CLONE_NEWUSER) tried in a child (nil: allowed).
	Unshare error
	// ProcCovers are the mount points inside the proc mounts box sees (a container's
	// masking: a file such as /proc/sys/kernel/random/boot_id mounted over), when no proc
	// mount is free of them; the kernel then refuses a new proc in a user namespace.
	ProcCovers []string
	// TrialRan: a minimal bwrap sandbox was tried; TrialErr is its failure (nil: it ran)
	// and TrialStderr what bwrap said.
	TrialRan    bool
	TrialErr    error
	TrialStderr string
}

// UsernsDiagnosis is what Diagnose found: the cause, the facts that show it, and the
// narrowest fix outside box (the CLI adds box's own verbs).
type UsernsDiagnosis struct {
	Cause  UsernsCause
	Detail string
	Fix    string
}

// OK: the sandbox can start.
func (d UsernsDiagnosis) OK() bool { return d.Cause == UsernsOK }

// DiagnoseUserns names why a sandbox cannot start here, from recorded facts.
func DiagnoseUserns(f UsernsFacts) UsernsDiagnosis {
	errno := errnoOf(f.Unshare)
	trialOK := f.TrialRan && f.TrialErr == nil
	if trialOK {
		d := UsernsDiagnosis{Cause: UsernsOK, Detail: "a trial sandbox ran"}
		if f.AppArmorRestrict == "1" {
			d.Detail += "; AppArmor restricts user namespaces here and " + allowedBy(f)
		}
		if f.Unshare != nil && f.BwrapSetuid {
			d.Detail += "; unprivileged user namespaces are refused (" + f.Unshare.Error() + "): the setuid bwrap makes them as root"
		}
		return d
	}
	switch {
	case f.MaxUserNS == "0":
		return UsernsDiagnosis{Cause: UsernsMaxZero,
			Detail: "user namespaces are disabled: user.max_user_namespaces=0" + inContainer(f),
			Fix:    "as root on the host (or in the namespace that set it): sysctl -w user.max_user_namespaces=15000"}
	case f.UnprivClone == "0":
		return UsernsDiagnosis{Cause: UsernsCloneOff,
			Detail: "unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone=0",
			Fix:    "as root: sysctl -w kernel.unprivileged_userns_clone=1"}
	case errno == syscall.ENOSPC:
		// The limit may be an enclosing user namespace's, which this one cannot read: a
		// sandbox or runner that made it and forbade nesting (bwrap --disable-userns
		// leaves this namespace's own sysctl at its default).
		return UsernsDiagnosis{Cause: UsernsMaxZero,
			Detail: "no user namespace left to create (ENOSPC): the count allowed by user.max_user_namespaces=" + orUnknown(f.MaxUserNS) +
				" is used up, or an enclosing user namespace's limit is (a container, runner or sandbox around box that forbids nesting, such as bwrap --disable-userns)",
			Fix: "as root where the limit is set: raise user.max_user_namespaces (sysctl -w user.max_user_namespaces=15000); an enclosing namespace's limit cannot be raised from inside it: run box outside it"}
	case f.AppArmorRestrict == "1":
		return apparmorCase(f)
	case errno == syscall.EPERM:
		return UsernsDiagnosis{Cause: UsernsSeccomp,
			Detail: "unshare(CLONE_NEWUSER) is refused (EPERM) while user.max_user_namespaces=" + orUnknown(f.MaxUserNS) +
				" and no AppArmor restriction is set: a seccomp filter refuses user namespaces" + inContainer(f),
			Fix: "run the container with a seccomp profile that allows user namespaces (Docker: --security-opt seccomp=PROFILE, " +
				"Docker's default profile with clone, unshare and setns allowed for CLONE_NEWUSER), not --privileged and not seccomp=unconfined"}
	}
	if procMasked(f) {
		// Field test (session 19): an unprivileged Incus container without
		// security.nesting; with it, the same container ran the sandbox.
		return UsernsDiagnosis{Cause: UsernsProcMasked,
			Detail: "a trial sandbox failed: " + trialText(f) + "; user namespaces are allowed, but every /proc mounted here has something mounted over part of it (" +
				coversText(f.ProcCovers) + "), and the kernel refuses a new /proc in a user namespace unless one is fully visible: a container that masks /proc (Incus or LXD without security.nesting, Docker's masked paths)",
			Fix: "on the container's host: incus config set NAME security.nesting=true, then restart it (LXD: lxc config set NAME security.nesting=true); " +
				"Docker: --security-opt systempaths=unconfined (Podman: --security-opt unmask=ALL); or run box outside the container"}
	}
	d := UsernsDiagnosis{Cause: UsernsUnknown, Fix: "box does not recognise this failure; the trial sandbox's error above says what was refused " +
		"(a security policy around box, such as an AppArmor profile or a seccomp filter, is the usual cause: dmesg shows AppArmor's denials)"}
	switch {
	case f.Bwrap == "" && f.Unshare != nil:
		d.Detail = "unshare(CLONE_NEWUSER) failed: " + f.Unshare.Error()
	case f.Bwrap == "":
		d.Detail = "untested (no bwrap)"
	case !f.TrialRan:
		d.Detail = "no trial sandbox could be run"
	default:
		d.Detail = "a trial sandbox failed: " + trialText(f)
		if f.Unshare != nil {
			d.Detail += "; unshare(CLONE_NEWUSER): " + f.Unshare.Error()
		}
	}
	return d
}

// apparmorCase: kernel.apparmor_restrict_unprivileged_userns=1 and the trial failed.
func apparmorCase(f UsernsFacts) UsernsDiagnosis {
	bin := orUnknown(f.Bwrap)
	prof := profileFor(f)
	if prof != "" && hasProfile(f.Profiles, "unpriv_bwrap") {
		return UsernsDiagnosis{Cause: UsernsAppArmorChildren,
			Detail: fmt.Sprintf("AppArmor profile %q for %s is loaded and moves what bwrap runs into unpriv_bwrap, without capabilities; the trial sandbox failed inside it: %s", prof, bin, trialText(f)),
			Fix:    "see the kernel's AppArmor denials (dmesg | grep 'apparmor=\"DENIED\"'); a profile granting " + bin + " only userns, without confining its children, is the narrow fix"}
	}
	d := UsernsDiagnosis{Cause: UsernsAppArmorRestrict,
		Fix: "load an AppArmor profile that grants userns to " + bin + " alone (the restriction stays on for everything else); " +
			"not sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, which lifts it for every program"}
	d.Detail = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) and "
	switch {
	case prof != "":
		d.Detail += fmt.Sprintf("profile %q is loaded but the trial sandbox still failed: %s", prof, trialText(f))
	case f.ProfilesErr != nil:
		d.Detail += "whether a profile for " + bin + " is loaded is unknown (" + f.ProfilesErr.Error() + "); the trial sandbox failed: " + trialText(f)
	default:
		d.Detail += "no profile for " + bin + " is loaded; the trial sandbox failed: " + trialText(f)
	}
	return d
}

// allowedBy says what lets this bwrap through the restriction.
func allowedBy(f UsernsFacts) string {
	if p := profileFor(f); p != "" {
		return fmt.Sprintf("profile %q grants %s userns", p, orUnknown(f.Bwrap))
	}
	return "this bwrap is allowed anyway (no profile for it is known to box)"
}

// profileFor is the loaded profile that attaches to the bwrap in use, as far as the
// names tell: box's own (attached to this path), one named by the path, or the distro's
// "bwrap" for /usr/bin/bwrap (Ubuntu's bwrap-userns-restrict).
func profileFor(f UsernsFacts) string {
	switch {
	case f.Bwrap == "":
		return ""
	case hasProfile(f.Profiles, BoxProfileName) && f.BoxProfileAttach == f.Bwrap:
		return BoxProfileName
	case hasProfile(f.Profiles, f.Bwrap):
		return f.Bwrap
	case f.Bwrap == "/usr/bin/bwrap" && hasProfile(f.Profiles, "bwrap"):
		return "bwrap"
	}
	return ""
}

// hasProfile: name is among the loaded profiles' lines ("name (mode)").
func hasProfile(lines []string, name string) bool {
	for _, l := range lines {
		n, _, _ := strings.Cut(strings.TrimSpace(l), " (")
		if n == name {
			return true
		}
	}
	return false
}

// procMasked: the namespace was made, bwrap could not mount its /proc (EPERM, not
// AppArmor's EACCES), and every proc mount box sees has mounts over part of it.
func procMasked(f UsernsFacts) bool {
	return f.Unshare == nil && len(f.ProcCovers) > 0 && f.TrialRan && f.TrialErr != nil &&
		strings.Contains(f.TrialStderr, "Can't mount proc") && strings.Contains(f.TrialStderr, "Operation not permitted")
}

// coversText names the first few covered paths.
func coversText(covers []string) string {
	const most = 3
	if len(covers) <= most {
		return strings.Join(covers, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(covers[:most], ", "), len(covers)-most)
}

func trialText(f UsernsFacts) string {
	if s := strings.TrimSpace(f.TrialStderr); s != "" {
		return s
	}
	if f.TrialErr != nil {
		return f.TrialErr.Error()
	}
	return "no message"
}

func inContainer(f UsernsFacts) string {
	if f.SeccompMode == "2" {
		return " (box itself runs under a seccomp filter: a container?)"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// UsernsError: the sandbox cannot start here, for the diagnosed cause. box run exits
// with ExitStart for it.
type UsernsError struct {
	UsernsDiagnosis
	// Box: the launch was a bwrap box's (box exec, box shell), which the Landlock mode
	// cannot run: its hint must not offer that mode for it.
	Box bool
}

// usernsOfBox marks a user-namespace failure of a bwrap box's launch (UsernsError.Box).
func (p *Plan) usernsOfBox(err error) error {
	var ue *UsernsError
	if p.Isolation.persistent && errors.As(err, &ue) {
		ue.Box = true
	}
	return err
}

func (e *UsernsError) Error() string {
	return "the sandbox cannot start: " + e.Detail
}

// ExitStart is box run's exit code when the sandbox could not start (box's own failure,
// as env(1) and docker run use 125).
const ExitStart = 125
