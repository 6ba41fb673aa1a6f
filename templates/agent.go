package templates

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/internal/charclass"
)

// Agent is what a bwrap sandbox must know of the agent a template runs: where it keeps
// its state, the variable that points it there, its credential files, and the file it
// reads instructions from. It is template data, so a template for another agent needs
// no code. A template without an [agent] table gets DefaultAgent (Claude Code's).
type Agent struct {
	// StateDir is home-relative (".claude"): the sandbox gets it from the instance
	// directory (or the box's own state), never from the operator's home.
	StateDir string `toml:"state_dir" json:"state_dir"`
	// ConfigEnv names the variable set to $HOME/StateDir ("" sets none). Claude Code
	// keeps .claude.json in there instead of $HOME.
	ConfigEnv string `toml:"config_env" json:"config_env"`
	// Credentials are StateDir-relative files holding a login: auth passthrough binds
	// the host's read-only; box never lets a planted link stand at their place.
	Credentials []string `toml:"credentials" json:"credentials"`
	// Instructions is the StateDir file box makes import SANDBOX.md ("" adds none).
	Instructions string `toml:"instructions" json:"instructions"`
}

// DefaultAgent is Claude Code's layout, for templates that do not say.
var DefaultAgent = Agent{
	StateDir: ".claude", ConfigEnv: "CLAUDE_CONFIG_DIR",
	Credentials: []string{".credentials.json"}, Instructions: "CLAUDE.md",
}

// AgentOf is t's agent, DefaultAgent when t has none.
func (t *Template) AgentOf() Agent {
	if t == nil || t.Agent == nil {
		return DefaultAgent
	}
	return *t.Agent
}

// CredentialPaths are the agent's credential files, home-relative.
func (a Agent) CredentialPaths() []string {
	out := make([]string, len(a.Credentials))
	for i, c := range a.Credentials {
		out[i] = filepath.Join(a.StateDir, c)
	}
	return out
}

var (
	envFirst = charclass.New("A-Za-z_")
	envRest  = charclass.New("A-Za-z0-9_")
)

// relPath: a clean relative path that stays where it starts (no "..", not ".").
func relPath(p string) bool {
	return p != "" && p != "." && !filepath.IsAbs(p) && filepath.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../") && !strings.ContainsAny(p, "\x00\n")
}

// Validate checks the agent's fields; errors name the key.
func (a Agent) Validate() error {
	if !relPath(a.StateDir) {
		return fmt.Errorf("agent.state_dir %q: want a clean path relative to the home directory, such as .claude", a.StateDir)
	}
	if a.ConfigEnv != "" && !charclass.Match(a.ConfigEnv, envFirst, envRest, 0) {
		return fmt.Errorf("agent.config_env %q: want a variable name such as CLAUDE_CONFIG_DIR", a.ConfigEnv)
	}
	for _, c := range a.Credentials {
		if !relPath(c) {
			return fmt.Errorf("agent.credentials %q: want a clean path relative to state_dir", c)
		}
	}
	if a.Instructions != "" && (strings.Contains(a.Instructions, "/") || !relPath(a.Instructions)) {
		return fmt.Errorf("agent.instructions %q: want a file name in state_dir, such as CLAUDE.md", a.Instructions)
	}
	return nil
}
