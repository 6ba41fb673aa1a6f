package main

import (
	"fmt"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/inet"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// A checkResult is one line of 'box --check'.
type checkResult struct {
	name   string
	ok     bool
	fatal  bool // the bwrap backend cannot run while this fails
	detail string
	fix    string
}

// bwrapChecks diagnoses the bwrap backend. Each check says what it found and, on
// failure, how to fix it.
func bwrapChecks() []checkResult {
	var out []checkResult
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		out = append(out, checkResult{name: "bwrap", fatal: true, detail: "not found on PATH", fix: "apt-get install bubblewrap"})
	} else {
		r := checkResult{name: "bwrap", ok: true, fatal: true, detail: bin}
		if v, err := exec.Command(bin, "--version").Output(); err == nil {
			ver := strings.TrimSpace(strings.TrimPrefix(string(v), "bubblewrap "))
			r.detail = bin + " " + ver
			if !versionAtLeast(ver, 0, 8) {
				r.ok, r.fix = false, "box needs bubblewrap 0.8 or newer (for --disable-userns); upgrade it"
			}
		}
		out = append(out, r)
		if fi, err := os.Stat(bin); err == nil && fi.Mode()&os.ModeSetuid != 0 {
			out = append(out, checkResult{name: "setuid bwrap", fatal: true, detail: bin + " is setuid root",
				fix: "box runs bwrap unprivileged through user namespaces: chmod u-s " + bin})
		} else {
			out = append(out, checkResult{name: "setuid bwrap", ok: true, detail: "not setuid (good)"})
		}
	}
	out = append(out, userNSCheck(bin), limitsCheck(bwrap.DetectCgroup(os.Geteuid()), os.Geteuid()))
	out = append(out, seccompCheck(bin), abstractScopeCheck())
	out = append(out, nixCheck())
	out = append(out, internetChecks()...)
	return append(out, allowlistCheck())
}

// abstractScopeCheck: tier full's Landlock scope over abstract unix sockets, really
// tried. Not fatal: only tier full needs it, and without it box warns at launch.
func abstractScopeCheck() checkResult {
	if err := bwrap.CheckAbstractScope(); err != nil {
		return checkResult{name: "abstract sockets", detail: "tier full would reach the host's abstract unix sockets (an X server, D-Bus): " + err.Error(),
			fix: "a Linux 6.12+ kernel with landlock in its lsm= list (check /sys/kernel/security/lsm)"}
	}
	return checkResult{name: "abstract sockets", ok: true, detail: "tier full cannot reach the host's (Landlock scope, tried)"}
}

// allowlistCheck: the allowlist tier's setup, really run in a throwaway namespace. Not
// fatal: only that tier needs it.
func allowlistCheck() checkResult {
	if err := inet.CheckAllowlist(nil); err != nil {
		return checkResult{name: "allowlist tier", detail: "setup failed in a throwaway namespace: " + err.Error(),
			fix: "user namespaces and nftables (nat included) in them must be available"}
	}
	return checkResult{name: "allowlist tier", ok: true, detail: "usable: route, redirect table and sockets (tried in a throwaway namespace)"}
}

// limitsCheck says what holds a sandbox's limits here. rlimits are a warning, not a
// failure: the sandbox is still bounded, less tightly.
func limitsCheck(cg bwrap.Cgroup, euid int) checkResult {
	e := bwrap.PlanEnforcement(bwrap.Limits{Pids: bwrap.DefaultPids, Memory: bwrap.MinMemory}, cg, euid)
	r := checkResult{name: "limits", ok: e.Mechanism != bwrap.MechRlimit && len(e.Unenforced) == 0, detail: e.Describe()}
	if e.Mechanism == bwrap.MechRlimit {
		r.detail = "rlimit: RLIMIT_NPROC bounds the sandbox's tasks, RLIMIT_DATA each process's memory; " +
			"shared memory is not counted and cpu cannot be bounded (" + cg.Why + ")"
		r.fix = "log in through a systemd session (its user manager delegates a cgroup v2 subtree), or have root delegate one to you"
	} else if cg.Parent["cpu"] == "" {
		r.detail += "; cpu not delegated (a profile's cpu is not enforced)"
	}
	for _, u := range e.Unenforced {
		r.detail += "; " + u
	}
	return r
}

// internetChecks: what the internet tier needs. It really installs the egress filter in
// a throwaway namespace, so "ok" means the tier can run. Not fatal: tiers none and full
// do not need it.
func internetChecks() []checkResult {
	problems := inet.Check(inet.Options{})
	if len(problems) == 0 {
		o, _ := inet.Options{}.Resolve()
		return []checkResult{{name: "internet tier", ok: true, detail: "usable: " + string(o.Helper) + " and the egress filter (tried in a throwaway namespace)"}}
	}
	var out []checkResult
	for _, p := range problems {
		out = append(out, checkResult{name: "internet tier", detail: p.What + ": " + p.Err.Error(), fix: p.Fix})
	}
	return out
}

// userNSCheck tries what box needs: an unprivileged user namespace. With bwrap present it
// runs a minimal sandbox, the only proof that counts.
func userNSCheck(bin string) checkResult {
	r := checkResult{name: "user namespaces", fatal: true}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		r.detail, r.fix = "disabled (kernel.unprivileged_userns_clone=0)", "sysctl -w kernel.unprivileged_userns_clone=1"
		return r
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		r.detail, r.fix = "disabled (user.max_user_namespaces=0)", "sysctl -w user.max_user_namespaces=15000"
		return r
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		r.detail = "restricted by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1)"
		r.fix = "allow bwrap an AppArmor userns profile, or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
		// Not returned yet: the trial below tells whether bwrap is allowed anyway.
	}
	if bin == "" {
		if r.detail == "" {
			r.detail = "untested (no bwrap)"
		}
		return r
	}
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		r.detail = "a trial sandbox failed: " + strings.TrimSpace(string(out))
		if r.fix == "" {
			r.fix = "check that unprivileged user namespaces are enabled (see the kernel's user.max_user_namespaces)"
		}
		return r
	}
	r.ok, r.detail, r.fix = true, "a trial sandbox ran", ""
	return r
}

var verRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)\.(\d+)`) })

func versionAtLeast(v string, major, minor int) bool {
	m := verRE().FindStringSubmatch(v)
	if m == nil {
		return false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return a > major || a == major && b >= minor
}

// runCheck prints one line per check and fails when the bwrap backend cannot run.
func runCheck(e *env) error {
	fatal := 0
	for _, r := range bwrapChecks() {
		status := "ok  "
		if !r.ok {
			status = "warn"
			if r.fatal {
				status = "FAIL"
				fatal++
			}
		}
		fmt.Fprintf(e.stdout, "%s  %-16s %s\n", status, r.name, r.detail)
		if !r.ok && r.fix != "" {
			fmt.Fprintf(e.stdout, "      %-16s fix: %s\n", "", r.fix)
		}
	}
	if fatal > 0 {
		return withHint(fmt.Errorf("the bwrap backend cannot run here (%d problem(s) above)", fatal), "apply the fixes above, then run 'box --check' again")
	}
	return nil
}
