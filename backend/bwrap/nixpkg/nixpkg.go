// Package nixpkg realises a profile's Nix packages on the host, on the operator's behalf,
// before the sandbox starts: the sandbox gets the results read-only on its PATH and
// never talks to the host's nix-daemon (whose builds would run on the host's network).
//
// Results are cached under box's data directory, keyed by the list of installables, with a GC root per result, so a second launch evaluates nothing unless
// the profile changed (or a result was collected).
package nixpkg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heavy-duty/box/internal/errs"
)

// Features are the experimental features box asks of nix: Nix 2.4 or later is needed
// (`nix build --json` and flake references).
const Features = "nix-command flakes"

// Realiser builds installables with the host's nix.
type Realiser struct {
	Nix      string   // the nix binary (resolved)
	CacheDir string   // box-owned: <data>/box/packages
	Environ  []string // the operator's environment, for nix
}

// BuildError is nix's refusal to build an installable.
type BuildError struct {
	Installables []string
	Output       string // nix's last lines of stderr
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("profile packages: nix build %s failed:\n%s", strings.Join(e.Installables, " "), e.Output)
}

func (e *BuildError) Hint() string {
	return "fix or remove the package in the profile's packages; try it yourself with: nix build " + strings.Join(e.Installables, " ")
}

// cached is one cache entry.
type cached struct {
	Installables []string `json:"installables"`
	Outputs      []string `json:"outputs"`
}

// Key is the cache key of a list of installables. It does not depend on which nix built
// them: an entry is used only while every output it names is still in the store.
func Key(installables []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "box-nixpkg-v1\x00")
	for _, i := range installables {
		fmt.Fprintf(h, "%s\x00", i)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// Realise returns the store paths of every output of installables, building them when
// the cache has no valid entry. fresh reports whether nix ran.
func (r Realiser) Realise(ctx context.Context, installables []string) (outputs []string, fresh bool, err error) {
	if len(installables) == 0 {
		return nil, false, nil
	}
	key := Key(installables)
	entry := filepath.Join(r.CacheDir, key+".json")
	if c, ok := readCache(entry); ok && slices.Equal(c.Installables, installables) && allExist(c.Outputs) {
		return c.Outputs, false, nil
	}
	if r.Nix == "" {
		return nil, false, errs.WithHint(errors.New("profile packages need Nix on the host: nix is not on your PATH"),
			"install Nix (Debian: apt-get install nix-bin), or remove packages from the profile")
	}
	roots := filepath.Join(r.CacheDir, key)
	if err := os.MkdirAll(roots, 0o700); err != nil {
		return nil, false, err
	}
	args := []string{"--extra-experimental-features", Features, "build", "--json", "--out-link", filepath.Join(roots, "result"), "--"}
	cmd := exec.CommandContext(ctx, r.Nix, append(args, installables...)...)
	cmd.Env = r.Environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, true, &BuildError{Installables: installables, Output: lastLines(stderr.String(), 12)}
	}
	outputs, err = parseBuild(stdout.Bytes())
	if err != nil {
		return nil, true, fmt.Errorf("profile packages: reading nix build --json: %w", err)
	}
	data, _ := json.Marshal(cached{Installables: installables, Outputs: outputs})
	tmp := entry + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err == nil {
		_ = os.Rename(tmp, entry)
	}
	return outputs, true, nil
}

// parseBuild reads nix build --json: an array of results, each with "outputs" (built)
// or "path" (a store path given as is). Every output is kept, in order, once.
func parseBuild(data []byte) ([]string, error) {
	var results []struct {
		Path    string            `json:"path"`
		Outputs map[string]string `json:"outputs"`
	}
	if err := json.Unmarshal(data, &results); err != nil {
		return nil, err
	}
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, r := range results {
		add(r.Path)
		names := make([]string, 0, len(r.Outputs))
		for n := range r.Outputs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			add(r.Outputs[n])
		}
	}
	for _, p := range out {
		if !strings.HasPrefix(p, "/nix/store/") || strings.Contains(strings.TrimPrefix(p, "/nix/store/"), "/") {
			return nil, fmt.Errorf("output %q is not a store path", p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no outputs")
	}
	return out, nil
}

func readCache(file string) (cached, bool) {
	var c cached
	data, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(data, &c) != nil || len(c.Outputs) == 0 {
		return c, false
	}
	return c, true
}

func allExist(paths []string) bool {
	for _, p := range paths {
		if !strings.HasPrefix(p, "/nix/store/") {
			return false
		}
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
