package templates

import (
	"reflect"
	"strings"
	"testing"
)

func TestAgentDefaultAndClaude(t *testing.T) {
	b, err := Load("blank", "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Agent != nil || !reflect.DeepEqual(b.AgentOf(), DefaultAgent) {
		t.Errorf("blank: agent %+v, AgentOf %+v", b.Agent, b.AgentOf())
	}
	c, err := Load("claude", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent == nil || !reflect.DeepEqual(*c.Agent, DefaultAgent) {
		t.Errorf("claude: agent %+v", c.Agent)
	}
	if got := c.AgentOf().CredentialPaths(); !reflect.DeepEqual(got, []string{".claude/.credentials.json"}) {
		t.Errorf("credential paths %v", got)
	}
}

func TestAgentOtherAgent(t *testing.T) {
	tp, err := ParseManifest("t/template.toml", []byte(`command = ["aider"]
[agent]
state_dir = ".aider"
config_env = "AIDER_HOME"
credentials = ["oauth.json", "keys/token"]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Agent{StateDir: ".aider", ConfigEnv: "AIDER_HOME", Credentials: []string{"oauth.json", "keys/token"}}
	if !reflect.DeepEqual(tp.AgentOf(), want) {
		t.Errorf("agent %+v", tp.AgentOf())
	}
}

func TestAgentRefusals(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"state_dir = \"/root/.x\"", "agent.state_dir"},
		{"state_dir = \"../x\"", "agent.state_dir"},
		{"state_dir = \"a/../../b\"", "agent.state_dir"},
		{"state_dir = \"\"", "agent.state_dir"},
		{"state_dir = \".x\"\nconfig_env = \"A=B\"", "agent.config_env"},
		{"state_dir = \".x\"\ncredentials = [\"../../.ssh/id_ed25519\"]", "agent.credentials"},
		{"state_dir = \".x\"\ninstructions = \"a/b.md\"", "agent.instructions"},
		{"state_dir = \".x\"\nnetwork = \"lan\"", "networking"},
		{"state_dir = \".x\"\nwhat = 1", `unknown key "agent.what"`},
	} {
		_, err := ParseManifest("t/template.toml", []byte("[agent]\n"+c.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.body, err, c.want)
		}
	}
}
