package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Exit codes of a command box could not start in the sandbox, as env, docker and podman
// give them: found but not executable, and not found.
const (
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// CommandError is a sandbox command that would not start: bwrap's own exec failure
// exits 1, like a command's own failure, so box looks the command up first, in the
// sandbox's view of the filesystem, and refuses it with 126 or 127 before launch. After
// this check, a 126 or 127 is the command's own.
type CommandError struct {
	Name     string
	NotFound bool   // else found but not executable
	Where    string // where it was looked for ("": in the sandbox)
}

func (e *CommandError) Error() string {
	if e.NotFound {
		where := e.Where
		if where == "" {
			where = "in the sandbox"
		}
		return fmt.Sprintf("command %q not found %s", e.Name, where)
	}
	return fmt.Sprintf("%s: not executable (permission denied)", e.Name)
}

// Code is the exit status for e (126 or 127).
func (e *CommandError) Code() int {
	if e.NotFound {
		return ExitNotFound
	}
	return ExitNotExecutable
}

// CheckCommand looks the plan's command up as execvp will inside, when box can tell
// the answer from outside: on the sandbox's PATH (box's tool links, the profile's
// packages, the system's directories, all bound from the host as they are), or, for a
// path, in the working directory and the system's directories. A path box cannot map
// (in the tmpfs home, under a profile mount) is left to the sandbox.
func (p *Plan) CheckCommand() error {
	if len(p.Spec.Command) == 0 {
		return nil
	}
	name := p.Spec.Command[0]
	var found, exec bool
	if strings.Contains(name, "/") {
		host, ok := p.hostPath(name)
		if !ok {
			return nil
		}
		found, exec = executable(host)
	} else {
		for _, dir := range strings.Split(p.sandboxPATH(), ":") {
			var f, x bool
			if dir == BinDir {
				for _, t := range p.Spec.Tools {
					if t.Name == name {
						f, x = executable(t.Path)
					}
				}
			} else if strings.HasPrefix(dir, "/nix/store/") {
				f, x = executable(filepath.Join(dir, name)) // a package, bound as it is
			} else if host, ok := p.hostPath(filepath.Join(dir, name)); ok {
				f, x = executable(host)
			} else {
				return nil // a directory box cannot see from here
			}
			found = found || f
			if x {
				return nil
			}
		}
	}
	if found && exec {
		return nil
	}
	return &CommandError{Name: name, NotFound: !found}
}

// sandboxPATH is PATH as the sandbox gets it.
func (p *Plan) sandboxPATH() string {
	for _, v := range p.Vars {
		if v.Name == "PATH" {
			return v.Value
		}
	}
	return ""
}

// hostPath maps a path inside the sandbox to the host's, when it is one box binds as
// it is (the working directory, the system's directories); ok is false for anything
// else (the home, mounts, the state directory).
func (p *Plan) hostPath(inside string) (string, bool) {
	if !filepath.IsAbs(inside) {
		inside = filepath.Join(p.Spec.Workdir, inside)
	}
	inside = filepath.Clean(inside)
	if within(inside, p.Spec.Workdir) {
		return inside, true
	}
	if within(inside, p.Spec.Home) || within(inside, "/nix") || within(inside, "/run") || within(inside, "/tmp") || within(inside, "/proc") || within(inside, "/dev") {
		return "", false
	}
	for _, m := range p.Spec.Mounts {
		if within(inside, m.Dst) {
			return "", false
		}
	}
	for _, dir := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/etc"} {
		if within(inside, dir) {
			return inside, true
		}
	}
	return "", false
}

// executable reports whether path exists and whether box's user (the sandbox's) may
// execute it.
func executable(path string) (found, exec bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return true, fi.Mode().IsRegular() && unix.Access(path, unix.X_OK) == nil
}
