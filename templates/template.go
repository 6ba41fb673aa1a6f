// Package templates holds the template model: what is in a box. A template names an
// image, a user, resources and cloud-init for the vm backend, and tools, a default
// command and sandbox notes for the bwrap backend. It never names a network: that comes
// from a profile's tier or a flag, and the manifest parsers reject any key that tries.
package templates

import (
	"fmt"
	"github.com/heavy-duty/box/internal/charclass"
	"github.com/heavy-duty/box/policy"
	"strconv"
	"strings"
)

// Template is one parsed, validated template.
type Template struct {
	Name        string
	Source      string // "built-in" or the template's directory
	Description string

	// vm backend
	Image         string
	User          string
	CPU           string
	Memory        string
	Disk          string
	RequireVM     bool
	Autostart     bool
	BootstrapRole string
	UserData      string // cloud-init user-data, passed to Incus verbatim

	// bwrap backend
	Tools   []string
	Command []string
	Notes   string // extra text for the sandbox's SANDBOX.md (sandbox.md in the template)
	Agent   *Agent // nil: DefaultAgent (see AgentOf)

	// File is the manifest the template was read from, for messages (a backend
	// refusing a key names it: see profiles.CheckKeys).
	File string
}

// NetworkError is returned for any manifest key that tries to choose networking.
type NetworkError struct {
	File string
	Line int
	Key  string
}

func (e *NetworkError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: key %q: templates cannot choose networking", loc, e.Key)
}

// Hint says where networking does come from.
func (e *NetworkError) Hint() string {
	return "the network comes from a profile's network tier or --network (" + strings.Join(policy.TierNames(), ", ") + ")"
}

// isNetworkKey is true for keys that would let a template pick a network. They get the
// NetworkError rather than a plain unknown-key error, so the reason is clear.
func isNetworkKey(key string) bool {
	k := strings.ToLower(strings.TrimPrefix(strings.ToUpper(key), "BOX_"))
	for _, w := range []string{"network", "net", "nic", "bridge", "acl", "firewall", "dns", "port", "expose", "proxy", "profile", "allow", "allowlist", "domains", "ssh"} {
		if k == w || strings.HasPrefix(k, w+"_") || strings.HasPrefix(k, w+".") || strings.HasSuffix(k, "_"+w) {
			return true
		}
	}
	return strings.Contains(k, "network")
}

var (
	alnum     = charclass.New("A-Za-z0-9")
	nameRest  = charclass.New("A-Za-z0-9_-")
	digits    = charclass.New("0-9")
	userFirst = charclass.New("a-z_")
	userRest  = charclass.New("a-z0-9_-")
	// Images are Incus image references: [remote:]alias-or-fingerprint.
	imageRest = charclass.New("A-Za-z0-9._:/-")
	// Tools are command names looked up on PATH, never paths or options.
	toolFirst = charclass.New("A-Za-z0-9_+")
	toolRest  = charclass.New("A-Za-z0-9._+-")
	sizeUnits = []string{"KiB", "MiB", "GiB", "TiB", "kB", "KB", "MB", "GB", "TB", "B"}
)

// NameOK reports whether s is a name: a letter or digit, then letters, digits, '-' and
// '_', at most 63 in all. Profiles and templates share the rule.
func NameOK(s string) bool { return charclass.Match(s, alnum, nameRest, 63) }

// positive reports whether s is a whole number without sign or leading zero.
func positive(s string) bool { return s != "" && s[0] != '0' && charclass.All(s, digits) }

// ValidName checks a template name. Names are names, not paths.
func ValidName(name string) error {
	if !NameOK(name) {
		return fmt.Errorf("invalid template name %q: a name is letters, digits, '-' and '_' (not a path)", name)
	}
	return nil
}

// sizeOK: a positive whole number and a unit (512MiB, 8GiB, 60GB).
func sizeOK(s string) bool {
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u); ok {
			return positive(n)
		}
	}
	return false
}

// unitBytes is each size unit in bytes, as Incus reads them (kB = 1000, KiB = 1024).
var unitBytes = map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "B": 1}

// ParseSize reads a size such as 8GiB (see ValidSize) as bytes.
func ParseSize(what, s string) (int64, error) {
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u); ok && positive(n) {
			v, err := strconv.ParseInt(n, 10, 64)
			if err == nil && v <= (1<<62)/unitBytes[u] {
				return v * unitBytes[u], nil
			}
		}
	}
	return 0, fmt.Errorf("%s %q: want a size such as 512MiB, 8GiB or 60GB", what, s)
}

// ValidCPU checks a CPU count.
func ValidCPU(s string) error {
	// Digits only: Atoi alone also takes "+4" and "004", which Incus's limits.cpu does not.
	n, err := strconv.Atoi(s)
	if err != nil || !positive(s) || n < 1 || n > 1024 {
		return fmt.Errorf("cpu %q: want a whole number of CPUs, 1 to 1024", s)
	}
	return nil
}

// ValidSize checks a memory or disk size such as 8GiB.
func ValidSize(what, s string) error {
	if !sizeOK(s) {
		return fmt.Errorf("%s %q: want a size such as 512MiB, 8GiB or 60GB", what, s)
	}
	return nil
}

// ValidTool checks a tool name.
func ValidTool(s string) error {
	if !charclass.Match(s, toolFirst, toolRest, 128) {
		return fmt.Errorf("tool %q: want a command name looked up on PATH, not a path", s)
	}
	return nil
}

// Validate checks the fields' formats. It is shared by every manifest format.
func (t *Template) Validate() error {
	if t.CPU != "" {
		if err := ValidCPU(t.CPU); err != nil {
			return err
		}
	}
	if t.Memory != "" {
		if err := ValidSize("memory", t.Memory); err != nil {
			return err
		}
	}
	if t.Disk != "" {
		if err := ValidSize("disk", t.Disk); err != nil {
			return err
		}
	}
	if t.User != "" && !charclass.Match(t.User, userFirst, userRest, 32) {
		return fmt.Errorf("user %q: want a login name (lowercase letters, digits, '-', '_')", t.User)
	}
	if t.Image != "" && !charclass.Match(t.Image, alnum, imageRest, 0) {
		return fmt.Errorf("image %q: want an Incus image reference such as images:debian/12", t.Image)
	}
	if t.Image != "" && t.User == "" {
		return fmt.Errorf("image %q is set but user is not: a box needs the user to enter as", t.Image)
	}
	for _, tool := range t.Tools {
		if err := ValidTool(tool); err != nil {
			return err
		}
	}
	for _, a := range t.Command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command: an argument contains a NUL byte")
		}
	}
	if len(t.Command) > 0 && t.Command[0] == "" {
		return fmt.Errorf("command: the program name is empty")
	}
	if t.Agent != nil {
		return t.Agent.Validate()
	}
	return nil
}
