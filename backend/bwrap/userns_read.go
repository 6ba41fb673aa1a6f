package bwrap

// The thin reader of the user-namespace facts DiagnoseUserns reads, and the two checks
// box run makes with them: before the launch (only what is certain and cheap) and after
// a launch that ended with bwrap's failure code.

import (
	"bytes"
	"fmt"
	"github.com/heavy-duty/box/internal/rawread"
	"github.com/heavy-duty/box/internal/userenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// The files the facts come from, variables so a test can point them at a recording.
var (
	sysctlMaxUserNS   = "/proc/sys/user/max_user_namespaces"
	sysctlUnprivClone = "/proc/sys/kernel/unprivileged_userns_clone"
	sysctlAARestrict  = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	apparmorFS        = "/sys/kernel/security/apparmor"
	boxProfileFile    = "/etc/apparmor.d/" + BoxProfileName
	procSelfStatus    = "/proc/self/status"
	procSelfMounts    = "/proc/self/mountinfo"
)

// ReadUsernsFacts reads the facts for bin (the bwrap box uses; "" none) and tries an
// unshare(CLONE_NEWUSER) and, with bwrap, a minimal sandbox.
func ReadUsernsFacts(bin string) UsernsFacts {
	f := readUsernsSysctls()
	if bin != "" {
		if r, err := filepath.EvalSymlinks(bin); err == nil {
			bin = r
		}
		if fi, err := os.Stat(bin); err == nil {
			f.BwrapSetuid = fi.Mode()&os.ModeSetuid != 0
		}
	}
	f.Bwrap = bin
	if _, err := os.Stat(apparmorFS); err == nil {
		f.AppArmor = true
		b, err := rawread.ReadFile(filepath.Join(apparmorFS, "profiles"))
		if err != nil {
			f.ProfilesErr = err
		} else {
			f.Profiles = strings.Split(strings.TrimSpace(string(b)), "\n")
		}
		if b, err := rawread.ReadFile(boxProfileFile); err == nil {
			f.BoxProfileAttach = ProfileAttachment(string(b))
		}
	}
	f.Unshare = tryUnshare(bin)
	if b, err := rawread.ReadFile(procSelfMounts); err == nil {
		f.ProcCovers = procCovers(b)
	}
	if bin != "" {
		f.TrialRan = true
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true")
		cmd.Stderr = &stderr
		f.TrialErr = cmd.Run()
		f.TrialStderr = stderr.String()
	}
	return f
}

// readUsernsSysctls reads the cheap facts: the sysctls and box's own seccomp mode.
func readUsernsSysctls() UsernsFacts {
	read := func(p string) string {
		b, err := rawread.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	f := UsernsFacts{MaxUserNS: read(sysctlMaxUserNS), UnprivClone: read(sysctlUnprivClone), AppArmorRestrict: read(sysctlAARestrict)}
	if b, err := rawread.ReadFile(procSelfStatus); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				f.SeccompMode = strings.TrimSpace(v)
			}
		}
	}
	return f
}

// procCovers are the mount points strictly inside the proc mounts of a mount table
// (/proc/self/mountinfo), or nil when one proc mount has none (the kernel lets a user
// namespace mount a new proc only when a proc mount is fully visible). Pure.
func procCovers(mountinfo []byte) []string {
	var procs, points []string
	for _, line := range strings.Split(string(mountinfo), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		point := unescapeMountinfo(f[4])
		points = append(points, point)
		if g[0] == "proc" && f[3] == "/" {
			procs = append(procs, point)
		}
	}
	var covers []string
	for _, pr := range procs {
		var in []string
		for _, pt := range points {
			if strings.HasPrefix(pt, pr+"/") {
				in = append(in, pt)
			}
		}
		if len(in) == 0 {
			return nil
		}
		covers = append(covers, in...)
	}
	return covers
}

// tryUnshare starts a child in a new user namespace (no uid map: only the namespace's
// creation is tried) running bin --version, or true without bwrap. It returns the errno
// of the clone, nil when it was allowed.
func tryUnshare(bin string) error {
	argv := []string{bin, "--version"}
	if bin == "" {
		p, err := exec.LookPath("true")
		if err != nil {
			return err
		}
		argv = []string{p}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	err := cmd.Start()
	if err != nil {
		return err // a *PathError wrapping the clone's errno
	}
	cmd.Wait() // its exit status is not the question
	return nil
}

// Compiled on first use: package init runs in every box process, whatever the verb.
var attachRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*profile\s+\S+\s+(/\S+)`) })

// ProfileAttachment is the path a profile's text attaches to ("" none found).
func ProfileAttachment(text string) string {
	if m := attachRE().FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// usernsBefore refuses a launch that certainly cannot start, from cheap facts: the
// sysctls that turn user namespaces off, and, only when box itself runs under a seccomp
// filter (a container), a real unshare tried. It reads nothing else, so a launch on a
// machine where namespaces work pays a few small reads.
func usernsBefore(bin string, f UsernsFacts) error {
	if f.MaxUserNS != "0" && f.UnprivClone != "0" && f.SeccompMode != "2" {
		return nil
	}
	if f.SeccompMode == "2" && f.MaxUserNS != "0" && f.UnprivClone != "0" {
		if f.Unshare = tryUnshare(bin); f.Unshare == nil {
			return nil
		}
	}
	f.Bwrap = bin
	return &UsernsError{UsernsDiagnosis: DiagnoseUserns(f)}
}

// usernsTrial is the full diagnosis with a trial sandbox, spared when a launch with the
// same facts already ran (usernsKey).
func usernsTrial(bin, key string) error {
	if usernsKnownHealthy(key) {
		return nil
	}
	d := DiagnoseUserns(ReadUsernsFacts(bin))
	if !d.OK() {
		return &UsernsError{UsernsDiagnosis: d}
	}
	rememberUsernsHealthy(key)
	return nil
}

// bwrapFailed is bwrap's exit code when it dies before the command runs.
const bwrapFailed = 1

// usernsAfter: a launch ended with code; when that is bwrap's failure code and the
// host cannot start a sandbox at all (diagnosed with a real trial), the command never
// ran and the cause is the answer. Any other end passes the code on. key is the one
// taken before the launch (Plan.chooseIsolation): read again now, it could differ for
// no reason of the host's (the seccomp mode /proc/self/status shows is the main
// thread's, and the launch may have put the unix socket filter on it), and a key that
// flips makes the next launch pay the whole trial diagnosis.
func usernsAfter(bin, key string, code int) error {
	if code == 0 {
		// The sandbox started: remember it for these facts, so a later exit 1 (grep
		// finding nothing, a failing test) does not pay for a trial sandbox.
		rememberUsernsHealthy(key)
		return nil
	}
	if code != bwrapFailed || usernsKnownHealthy(key) {
		return nil
	}
	d := DiagnoseUserns(ReadUsernsFacts(bin))
	if !d.OK() {
		return &UsernsError{UsernsDiagnosis: d}
	}
	rememberUsernsHealthy(key)
	return nil
}

// usernsKey names the facts a healthy launch depends on: the bwrap binary (path, size,
// change time) and the sysctls and seccomp mode readUsernsSysctls reads. "" when bwrap
// cannot be stat'ed (nothing is remembered then). An AppArmor profile loaded later
// without any of these changing is not in the key: its launch fails with bwrap's own
// text and exit 1, and box --check still names the cause.
func usernsKey(bin string, f UsernsFacts) string {
	fi, err := os.Stat(bin)
	if err != nil {
		return ""
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ctime int64
	if st != nil {
		ctime = st.Ctim.Nano()
	}
	return fmt.Sprintf("%s %d %d %q %q %q %q\n", bin, fi.Size(), ctime, f.MaxUserNS, f.UnprivClone, f.AppArmorRestrict, f.SeccompMode)
}

// usernsHealthyFile is where the last healthy launch's key is kept (the operator's
// cache; the sandbox never sees it, and it only spares a diagnosis, never a check).
func usernsHealthyFile() string {
	dir := userenv.CacheHome(os.Getenv) // never relative: HOME=rel named the working directory
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "box", "userns-ok")
}

func usernsKnownHealthy(key string) bool {
	p := usernsHealthyFile()
	if key == "" || p == "" {
		return false
	}
	b, err := rawread.ReadFile(p)
	return err == nil && string(b) == key
}

func rememberUsernsHealthy(key string) {
	p := usernsHealthyFile()
	if key == "" || p == "" || usernsKnownHealthy(key) {
		return
	}
	if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
		_ = writeAtomic(p, []byte(key))
	}
}
