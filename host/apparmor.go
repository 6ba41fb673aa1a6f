package host

// box setup-userns: an AppArmor profile that grants user namespaces to exactly the bwrap
// binary box uses, where Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1 keeps
// them from unconfined programs. The restriction stays on for everything else.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/heavy-duty/box/backend/bwrap"
)

// UsernsProfileName is the profile's name and its file's name under /etc/apparmor.d: the
// name box --check looks for.
const UsernsProfileName = bwrap.BoxProfileName

// ErrNoAppArmor: the kernel has no AppArmor enabled, so nothing restricts user
// namespaces through it and a profile could not be loaded.
var ErrNoAppArmor = errors.New("AppArmor is not enabled in this kernel (/sys/module/apparmor/parameters/enabled): no AppArmor restriction keeps bwrap from user namespaces here, and no profile can be loaded")

// UsernsPathError: the bwrap path cannot be named exactly in a profile (it is not
// absolute, or holds a character AppArmor would read as a pattern or a separator).
type UsernsPathError struct{ Path string }

func (e *UsernsPathError) Error() string {
	return fmt.Sprintf("%q cannot be named exactly in an AppArmor profile: box writes only absolute paths of letters, digits and ._+-@/ (a glob character would grant more than one binary)", e.Path)
}

// plainPath: the characters a profile's attachment may hold without meaning a pattern.
// Compiled on first use: package init runs in every box process, whatever the verb.
var plainPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/[A-Za-z0-9._+@/-]+$`) })

// UsernsProfile is the profile's text for bwrap (a resolved, absolute path). It grants
// userns and nothing else: flags=(unconfined) leaves bwrap as unconfined as it was, so
// the profile adds no rule but the one the restriction takes away.
func UsernsProfile(bwrap string) (string, error) {
	if !plainPath().MatchString(bwrap) || filepath.Clean(bwrap) != bwrap {
		return "", &UsernsPathError{bwrap}
	}
	return `# Written by box setup-userns. It lets ` + bwrap + ` (the bwrap box uses) create
# user namespaces while kernel.apparmor_restrict_unprivileged_userns=1 keeps them from
# every other unconfined program. It confines nothing: bwrap stays unconfined.
# Remove it with: sudo box setup-userns --remove
abi <abi/4.0>,

include <tunables/global>

profile ` + UsernsProfileName + ` ` + bwrap + ` flags=(unconfined) {
  userns,
}
`, nil
}

// Userns installs and removes the profile. Its fields are host facts and actions, so a
// test runs it against a temporary root with a recorded loader.
type Userns struct {
	Root     string // the filesystem root the profile goes under ("/")
	AppArmor bool   // the kernel has AppArmor enabled
	// Load compiles and loads (or replaces) the profile in file; Unload removes the
	// loaded profile that file defines. apparmor_parser -r / -R in the CLI.
	Load, Unload func(file string) error
}

// UsernsOn is Userns on this machine under root: AppArmor's state read once, the
// profile loaded and unloaded by apparmor_parser (there is no Go library for it).
func UsernsOn(root string) Userns {
	b, _ := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	parse := func(flag string) func(string) error {
		return func(file string) error {
			out, err := exec.Command("apparmor_parser", flag, file).CombinedOutput()
			if err != nil {
				return fmt.Errorf("apparmor_parser %s: %w: %s", flag, err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	return Userns{Root: root, AppArmor: strings.TrimSpace(string(b)) == "Y", Load: parse("-r"), Unload: parse("-R")}
}

// Resolve is the path the profile names for the absolute bwrap path bin: its symlinks
// resolved under Root, as the kernel will see it once Root is "/". A link that leads
// outside Root is refused.
func (u Userns) Resolve(bin string) (string, error) {
	resolved, err := filepath.EvalSymlinks(filepath.Join(u.Root, bin))
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", bin, err)
	}
	if u.Root != "/" {
		rel, err := filepath.Rel(filepath.Clean(u.Root), resolved)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", fmt.Errorf("%s resolves outside %s", bin, u.Root)
		}
		resolved = "/" + rel
	}
	return resolved, nil
}

// ProfilePath is where the profile lives under root.
func (u Userns) ProfilePath() string {
	return filepath.Join(u.Root, "etc", "apparmor.d", UsernsProfileName)
}

// Install writes the profile for bwrap and loads it: Created, Changed (another bwrap
// was named before) or Right (the same text, loaded again so the kernel has it too).
func (u Userns) Install(bwrap string) (Step, error) {
	step := Step{Object: "AppArmor profile " + UsernsProfileName}
	if !u.AppArmor {
		return step, ErrNoAppArmor
	}
	text, err := UsernsProfile(bwrap)
	if err != nil {
		return step, err
	}
	path := u.ProfilePath()
	old, err := os.ReadFile(path)
	switch {
	case err == nil && string(old) == text:
		step.Outcome = Right
	case err == nil:
		step.Outcome = Changed
	case errors.Is(err, os.ErrNotExist):
		step.Outcome = Created
	default:
		return step, err
	}
	step.Detail = "userns for " + bwrap + " only (" + path + ")"
	if step.Outcome != Right {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return step, err
		}
		tmp := path + ".box-tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			return step, err
		}
		// Loaded before it replaces the old file: a profile the parser refuses never
		// becomes the one the next boot loads.
		if err := u.Load(tmp); err != nil {
			os.Remove(tmp)
			return step, fmt.Errorf("loading %s: %w", path, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return step, err
		}
		return step, nil
	}
	if err := u.Load(path); err != nil {
		return step, fmt.Errorf("loading %s: %w", path, err)
	}
	return step, nil
}

// Remove unloads the profile (when AppArmor is enabled) and deletes its file: Removed,
// or Absent when there was none.
func (u Userns) Remove() (Step, error) {
	step := Step{Object: "AppArmor profile " + UsernsProfileName}
	path := u.ProfilePath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		step.Outcome = Absent
		return step, nil
	} else if err != nil {
		return step, err
	}
	if u.AppArmor {
		if err := u.Unload(path); err != nil {
			return step, fmt.Errorf("unloading %s: %w", path, err)
		}
	}
	if err := os.Remove(path); err != nil {
		return step, err
	}
	step.Outcome, step.Detail = Removed, path
	return step, nil
}
