package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"golang.org/x/sys/unix"
)

// seccompCheck loads box's syscall filter into a trial sandbox: every box run needs it.
func seccompCheck(bin string) checkResult {
	r := checkResult{name: "seccomp", fatal: true}
	f, err := seccomp.New(nil)
	if err != nil {
		r.detail, r.fix = err.Error(), "run box on x86_64 or aarch64"
		return r
	}
	prog, err := f.Bytes()
	if err != nil {
		r.detail = err.Error()
		return r
	}
	if bin == "" {
		r.detail = "untested (no bwrap)"
		return r
	}
	fd, err := unix.MemfdCreate("box-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		r.detail = "memfd: " + err.Error()
		return r
	}
	mf := os.NewFile(uintptr(fd), "box-seccomp")
	defer mf.Close()
	if _, err := mf.Write(prog); err != nil {
		r.detail = "memfd: " + err.Error()
		return r
	}
	if _, err := mf.Seek(0, 0); err != nil {
		r.detail = "memfd: " + err.Error()
		return r
	}
	// The trial's command checks that it runs under a filter.
	cmd := exec.Command(bin, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--seccomp", "3", "--", "sh", "-c", "grep -q '^Seccomp:.*2' /proc/self/status")
	cmd.ExtraFiles = []*os.File{mf}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.detail = "a trial sandbox under the filter failed: " + strings.TrimSpace(string(out)+" "+err.Error())
		r.fix = "box needs a kernel with seccomp filters (CONFIG_SECCOMP_FILTER) and bwrap's --seccomp"
		return r
	}
	r.ok, r.detail = true, fmt.Sprintf("%s loads in a trial sandbox (%d instructions)", f.Describe(), len(prog)/8)
	return r
}
