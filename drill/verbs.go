package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

// The verbs row of the vm drill: an instance box did not mint ("payroll-drill-<rand>",
// created raw through the API, running) is aimed at by every box verb, and each must
// refuse it with the tag-boundary error while the instance stays exactly as it was.

// NotBoxMessage is what a verb says when the tag boundary refuses an instance
// (boxes.NotBoxError; drill cannot import boxes' callers).
const NotBoxMessage = "is not a box: box never touches an instance it did not mint"

// VerbOutcome is what one box verb did.
type VerbOutcome struct {
	Args   []string
	Code   int
	Stderr string
	Err    error // the verb could not be run at all (or was killed by its time-out)
	// Terminal is what box wrote to its terminal, when it ran on one (the first
	// termShown bytes).
	Terminal []byte
}

// VerbRunner runs box with args (shell gets a terminal: tty is true) and reports what
// it did. The drill gives each run a time-out through ctx.
type VerbRunner func(ctx context.Context, args []string, tty bool) VerbOutcome

// Frozen is what must not change about an instance box refuses.
type Frozen struct {
	Config    map[string]string
	Devices   map[string]map[string]string
	Profiles  []string
	Status    string
	Snapshots int
	Pid       int64
}

// FreezeInstance reads what box must leave alone.
func FreezeInstance(ctx context.Context, c *incus.Client, name string) (Frozen, error) {
	inst, _, err := c.Instance(ctx, name)
	if err != nil {
		return Frozen{}, err
	}
	st, err := c.State(ctx, name)
	if err != nil {
		return Frozen{}, err
	}
	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		return Frozen{}, err
	}
	return Frozen{inst.Config, inst.Devices, inst.Profiles, inst.Status, len(snaps), st.Pid}, nil
}

// UntaggedOptions tune the verbs probe.
type UntaggedOptions struct {
	Client  *incus.Client
	Image   string
	Profile string // the placement profile (NIC and root disk)
	Run     VerbRunner
	// Config is the instance's own config. Empty means untagged: the drill's case. A
	// test sets user.box=1 here to bypass the tag check on purpose and see the row
	// turn BREACH.
	Config map[string]string
	Logf   func(string, ...any)
}

// UntaggedVerbs makes the instance, aims every verb at it, compares the instance
// before and after, deletes it, and returns the row.
func UntaggedVerbs(ctx context.Context, o UntaggedOptions) Result {
	r := Result{ID: "verbs:untagged", Group: "verbs", Probe: "every verb refuses an instance box did not mint",
		Targets: []string{}, Expected: "refused, unchanged"}
	seen, detail, err := untaggedVerbs(ctx, o, &r)
	return judged(r, Blocked, seen, detail, err)
}

func untaggedVerbs(ctx context.Context, o UntaggedOptions, r *Result) (bool, string, error) {
	c := o.Client
	if o.Run == nil {
		return false, "", fmt.Errorf("no way to run the box verbs")
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	nonce := make([]byte, 3)
	rand.Read(nonce)
	name := "payroll-drill-" + hex.EncodeToString(nonce)
	renamed, clone := name+"-renamed", name+"-clone"
	r.Targets = []string{name}
	cfg := maps.Clone(o.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["user.owner"] = "not-box"
	defer func() {
		// Everything this probe made, under every name a verb that did not refuse may
		// have left it (never another instance: the names are this probe's own).
		cctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		for _, n := range []string{name, renamed, clone} {
			if _, _, err := c.Instance(cctx, n); err != nil {
				continue
			}
			_ = c.Stop(cctx, n, 0, true)
			if err := c.Delete(cctx, n); err != nil && !incus.IsNotFound(err) {
				logf("drill: could not delete %s: %v", n, err)
			}
		}
	}()
	src, err := incus.ImageSource(o.Image)
	if err != nil {
		return false, "", err
	}
	req := incus.InstancesPost{Name: name, Type: incus.TypeContainer, Source: src,
		Profiles: []string{o.Profile}, Config: cfg}
	if err := c.Create(ctx, req); err != nil {
		return false, "", fmt.Errorf("create %s: %w", name, err)
	}
	if err := c.Start(ctx, name); err != nil {
		return false, "", fmt.Errorf("start %s: %w", name, err)
	}
	before, err := FreezeInstance(ctx, c, name)
	if err != nil {
		return false, "", err
	}
	var outs []VerbOutcome
	for _, args := range VerbProbes(name) {
		vctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		out := o.Run(vctx, args, args[0] == "shell")
		cancel()
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		outs = append(outs, out)
	}
	after, afterErr := FreezeInstance(ctx, c, name)
	_, _, cloneErr := c.Instance(ctx, clone)
	seen, detail := JudgeVerbs(outs, before, after, afterErr, cloneErr == nil)
	return seen, detail, nil
}

// VerbProbes are the box invocations aimed at name, in the order they run: the ones
// that only read first, the ones that destroy last, so that when the tag check is gone
// each still gets its chance to act.
func VerbProbes(name string) [][]string {
	return [][]string{
		{"info", name},
		{"info", name, "--json"},
		{"exec", name, "--", "true"},
		{"shell", name},
		{"snapshot", name, "drill"},
		{"restore", name, "drill", "--force"},
		{"incus", name, "--", "config", "set", "{}", "user.drill=breached"},
		{"expose", name, "3000", "39999"},
		{"export", name, "/tmp/" + name + ".tar.gz"},
		{"new", "--name", name + "-clone", "--from", name, "--timeout", "60s", "-q"},
		{"rename", name, name + "-renamed"},
		{"start", name},
		{"stop", name, "--force"},
		{"rm", name, "--force"},
	}
}

// JudgeVerbs is the verdict: seen (a BREACH) unless every verb refused with the
// tag-boundary error and the instance is unchanged and not cloned. It is pure.
func JudgeVerbs(outs []VerbOutcome, before, after Frozen, afterErr error, cloned bool) (seen bool, detail string) {
	var bad []string
	for _, o := range outs {
		verb := o.Args[0]
		switch {
		case o.Err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", verb, o.Err))
		case o.Code == 0:
			bad = append(bad, verb+": accepted (exit 0)")
		case !strings.Contains(o.Stderr, NotBoxMessage):
			bad = append(bad, fmt.Sprintf("%s: exit %d without the tag-boundary error: %s", verb, o.Code, firstLine(o.Stderr)))
		}
	}
	switch {
	case afterErr != nil:
		bad = append(bad, "the instance is gone or unreadable: "+afterErr.Error())
	default:
		bad = append(bad, frozenDiff(before, after)...)
	}
	if cloned {
		bad = append(bad, "a clone of it was made")
	}
	if len(bad) > 0 {
		return true, strings.Join(bad, "; ")
	}
	return false, fmt.Sprintf("%d verbs refused it; config, devices, profiles, state and snapshots unchanged", len(outs))
}

func frozenDiff(a, b Frozen) []string {
	var d []string
	if !maps.Equal(a.Config, b.Config) {
		var keys []string
		for k := range a.Config {
			if a.Config[k] != b.Config[k] {
				keys = append(keys, k)
			}
		}
		for k := range b.Config {
			if _, ok := a.Config[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		d = append(d, "config changed: "+strings.Join(keys, ", "))
	}
	if !maps.EqualFunc(a.Devices, b.Devices, func(x, y map[string]string) bool { return maps.Equal(x, y) }) {
		d = append(d, "devices changed")
	}
	if !slices.Equal(a.Profiles, b.Profiles) {
		d = append(d, fmt.Sprintf("profiles %v → %v", a.Profiles, b.Profiles))
	}
	if a.Status != b.Status {
		d = append(d, fmt.Sprintf("state %s → %s", a.Status, b.Status))
	} else if a.Pid != b.Pid {
		d = append(d, fmt.Sprintf("restarted (pid %d → %d)", a.Pid, b.Pid))
	}
	if a.Snapshots != b.Snapshots {
		d = append(d, fmt.Sprintf("snapshots %d → %d", a.Snapshots, b.Snapshots))
	}
	return d
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "(nothing on stderr)"
	}
	return s
}
