package bwrap

// box --check's trials: what the bwrap backend needs of the host, really tried where it
// can be. The CLI renders the results.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"golang.org/x/sys/unix"
)

// A HostCheck is one of the bwrap backend's host checks (a line of 'box --check').
type HostCheck struct {
	Name   string
	OK     bool
	Fatal  bool // the bwrap backend cannot run while this fails
	Detail string
	Fix    string // how to fix it, on failure
	// Cause: for the user-namespace check, why the sandbox cannot start (the CLI adds
	// box's own fix for it).
	Cause UsernsCause
}

// HostChecks diagnoses the bwrap backend on this host, trying for real what it can (a
// trial sandbox, the seccomp filter, the nix store helper, the network tiers' setup).
// Each check says what it found and, on failure, how to fix it.
func HostChecks() []HostCheck {
	var out []HostCheck
	bin, err := exec.LookPath("bwrap")
	if err != nil && os.Getenv("PATH") == "" {
		out = append(out, HostCheck{Name: "bwrap", Fatal: true, Detail: (&EmptyPathError{}).Error(), Fix: "set PATH, for example: export PATH=/usr/local/bin:/usr/bin:/bin"})
	} else if err != nil {
		out = append(out, HostCheck{Name: "bwrap", Fatal: true, Detail: "not found on PATH", Fix: "apt-get install bubblewrap"})
	} else {
		r := HostCheck{Name: "bwrap", OK: true, Fatal: true, Detail: bin}
		if v, err := exec.Command(bin, "--version").Output(); err == nil {
			ver := strings.TrimSpace(strings.TrimPrefix(string(v), "bubblewrap "))
			r.Detail = bin + " " + ver
			if !versionAtLeast(ver, 0, 8) {
				r.OK, r.Fix = false, "box needs bubblewrap 0.8 or newer (for --disable-userns); upgrade it"
			}
		}
		out = append(out, r)
		if fi, err := os.Stat(bin); err == nil && fi.Mode()&os.ModeSetuid != 0 {
			out = append(out, HostCheck{Name: "setuid bwrap", Fatal: true, Detail: bin + " is setuid root",
				Fix: "box runs bwrap unprivileged through user namespaces: chmod u-s " + bin})
		} else {
			out = append(out, HostCheck{Name: "setuid bwrap", OK: true, Detail: "not setuid (good)"})
		}
	}
	userns := userNSCheck(bin)
	out = append(out, userns, limitsCheck(DetectCgroup(os.Geteuid()), os.Geteuid()))
	sc := seccompCheck(bin)
	if !userns.OK && !sc.OK {
		// Its trial is a sandbox, which the user namespace case above already stops:
		// its failure says nothing of the filter (field review, session 16: it blamed
		// the kernel's CONFIG_SECCOMP_FILTER under a container's seccomp filter and in a
		// namespace that forbids nesting, a second "problem" with a wrong fix).
		sc = HostCheck{Name: "seccomp", Detail: "not tried: its trial sandbox needs the user namespace refused above"}
	}
	out = append(out, sc, abstractScopeCheck())
	out = append(out, nixCheck())
	out = append(out, internetChecks()...)
	out = append(out, allowlistCheck())
	if !userns.OK {
		// These trials run in a user namespace of their own: where none can be had,
		// their failure is that one (fork/exec: "no space left on device" under a
		// nesting limit, "operation not permitted" under a container's filter, which
		// read as a full disk or a missing permission).
		for i, c := range out {
			trial := ""
			switch {
			case c.OK:
			case c.Name == "nix" && strings.HasPrefix(c.Detail, `nix = "store" cannot run here`):
				trial = `nix = "store"'s trial`
			case c.Name == "internet tier" && strings.HasPrefix(c.Detail, "egress filter: "):
				trial = "the egress filter's trial"
			case c.Name == "allowlist tier":
				trial = "the allowlist tier's trial"
			}
			if trial != "" {
				out[i].Detail, out[i].Fix = "not tried: "+trial+" needs the user namespace refused above", ""
			}
		}
	}
	return out
}

// abstractScopeCheck: tier full's Landlock scope over abstract unix sockets, really
// tried. Not Fatal: only tier full needs it, and without it box warns at launch.
func abstractScopeCheck() HostCheck {
	if err := CheckAbstractScope(); err != nil {
		return HostCheck{Name: "abstract sockets", Detail: "tier full would reach the host's abstract unix sockets (an X server, D-Bus): " + err.Error(),
			Fix: "a Linux 6.12+ kernel with landlock in its lsm= list (check /sys/kernel/security/lsm)"}
	}
	return HostCheck{Name: "abstract sockets", OK: true, Detail: "tier full cannot reach the host's (Landlock scope, tried)"}
}

// allowlistCheck: the allowlist tier's setup, really run in a throwaway namespace. Not
// Fatal: only that tier needs it.
func allowlistCheck() HostCheck {
	if err := inet.CheckAllowlist(nil); err != nil {
		return HostCheck{Name: "allowlist tier", Detail: "setup failed in a throwaway namespace: " + err.Error(),
			Fix: "user namespaces and nftables (nat included) in them must be available"}
	}
	return HostCheck{Name: "allowlist tier", OK: true, Detail: "usable: route, redirect table and sockets (tried in a throwaway namespace)"}
}

// limitsCheck says what holds a sandbox's limits here. rlimits are a warning, not a
// failure: the sandbox is still bounded, less tightly.
func limitsCheck(cg Cgroup, euid int) HostCheck {
	e := PlanEnforcement(Limits{Pids: DefaultPids, Memory: MinMemory}, cg, euid)
	r := HostCheck{Name: "limits", OK: e.Mechanism != MechRlimit && len(e.Unenforced) == 0, Detail: e.Describe()}
	if e.Mechanism == MechRlimit {
		r.Detail = "rlimit: RLIMIT_NPROC bounds the sandbox's tasks, RLIMIT_DATA each process's memory; " +
			"shared memory is not counted and cpu cannot be bounded (" + cg.Why + ")"
		r.Fix = "log in through a systemd session (its user manager delegates a cgroup v2 subtree), or have root delegate one to you"
		if cg.V1Bound {
			// A systemd session delegates v2 only: followed here, it changed nothing
			// (field review, session 21).
			r.Fix = "pids and memory are cgroup v1 controllers on this machine, which a systemd session does not delegate: have root make a directory below your cgroup in /sys/fs/cgroup/pids and in /sys/fs/cgroup/memory (see /proc/self/cgroup), chown it and its cgroup.procs and tasks to you, and run box from a shell moved into both (echo $$ > DIR/cgroup.procs); or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)"
		}
	} else if cg.Parent["cpu"] == "" {
		r.Detail += "; cpu not delegated (a profile's cpu is not enforced)"
	}
	for _, u := range e.Unenforced {
		r.Detail += "; " + u
	}
	return r
}

// internetChecks: what the internet tier needs. It really installs the egress filter in
// a throwaway namespace, so "ok" means the tier can run. Not Fatal: tiers none and full
// do not need it.
func internetChecks() []HostCheck {
	problems := inet.Check(inet.Options{})
	if len(problems) == 0 {
		o, _ := inet.Options{}.Resolve()
		return []HostCheck{{Name: "internet tier", OK: true, Detail: "usable: " + string(o.Helper) + " and the egress filter (tried in a throwaway namespace)"}}
	}
	var out []HostCheck
	for _, p := range problems {
		out = append(out, HostCheck{Name: "internet tier", Detail: p.What + ": " + p.Err.Error(), Fix: p.Fix})
	}
	return out
}

// userNSCheck tries what box needs: an unprivileged user namespace. With bwrap present it
// runs a minimal sandbox, the only proof that counts; on failure the facts name the
// cause (DiagnoseUserns).
func userNSCheck(bin string) HostCheck {
	d := DiagnoseUserns(ReadUsernsFacts(bin))
	return HostCheck{Name: checkUserns, Fatal: true, OK: d.OK(), Detail: d.Detail, Fix: d.Fix, Cause: d.Cause}
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

// nixCheck: whether a profile's Nix keys can work here. nix = "store" is tried for real
// (box's helper layers a throwaway store and runs true). Not Fatal: only profiles that
// set the keys need it.
func nixCheck() HostCheck {
	r := HostCheck{Name: "nix"}
	if fi, err := os.Stat("/nix/store"); err != nil || !fi.IsDir() {
		r.OK, r.Detail = true, "no /nix/store on this host: the profile keys packages and nix = \"store\" need Nix"
		return r
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err == nil {
		err = NixStoreTrial(self)
	}
	if err != nil {
		r.Detail = "nix = \"store\" cannot run here: " + err.Error()
		r.Fix = "it needs unprivileged user namespaces with overlayfs (Linux 5.11 or later); use nix = \"none\" meanwhile"
		return r
	}
	r.OK, r.Detail = true, "/nix/store read-only inside; nix = \"store\" usable (a store layered over the host's, tried)"
	return r
}

// seccompCheck loads box's syscall filter into a trial sandbox: every box run needs it.
func seccompCheck(bin string) HostCheck {
	r := HostCheck{Name: "seccomp", Fatal: true}
	f, err := seccomp.New(nil)
	if err != nil {
		r.Detail, r.Fix = err.Error(), "run box on x86_64 or aarch64"
		return r
	}
	prog, err := f.Bytes()
	if err != nil {
		r.Detail = err.Error()
		return r
	}
	if bin == "" {
		r.Detail = "untested (no bwrap)"
		return r
	}
	fd, err := unix.MemfdCreate("box-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		r.Detail = "memfd: " + err.Error()
		return r
	}
	mf := os.NewFile(uintptr(fd), "box-seccomp")
	defer mf.Close()
	if _, err := mf.Write(prog); err != nil {
		r.Detail = "memfd: " + err.Error()
		return r
	}
	if _, err := mf.Seek(0, 0); err != nil {
		r.Detail = "memfd: " + err.Error()
		return r
	}
	// The trial's command checks that it runs under a filter.
	cmd := exec.Command(bin, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--seccomp", "3", "--", "sh", "-c", "grep -q '^Seccomp:.*2' /proc/self/status")
	cmd.ExtraFiles = []*os.File{mf}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.Detail = "a trial sandbox under the filter failed: " + strings.TrimSpace(string(out)+" "+err.Error())
		r.Fix = "box needs a kernel with seccomp filters (CONFIG_SECCOMP_FILTER) and bwrap's --seccomp"
		return r
	}
	r.OK, r.Detail = true, fmt.Sprintf("%s loads in a trial sandbox (%d instructions)", f.Describe(), len(prog)/8)
	return r
}
