package profiles

import (
	"errors"
	"strings"
	"testing"

	"github.com/heavy-duty/box/templates"
)

func TestSSHKey(t *testing.T) {
	const user = "ssh = { hosts = [\"github.com\"], keys = [\"SHA256:abc\"], sign = true }\n"
	p, err := Parse("mine", "/home/u/.config/box/profiles/mine.toml", []byte(user))
	if err != nil || p.SSH == nil || !p.SSH.Sign || p.SSH.Hosts[0] != "github.com" {
		t.Fatalf("user profile: %+v %v", p, err)
	}
	if _, err := Parse("mine", "built-in profile mine", []byte(user)); err == nil || !strings.Contains(err.Error(), "ssh") {
		t.Fatalf("built-in profile with ssh: %v", err)
	}
	if _, err := Parse("mine", "x.toml", []byte("ssh = { hosts = [\"github.com\"] }\n")); err == nil || !strings.Contains(err.Error(), "keys is empty") {
		t.Fatalf("no keys: %v", err)
	}
	if _, err := Parse("mine", "x.toml", []byte("backend = \"vm\"\n"+user)); err == nil || !strings.Contains(err.Error(), "ssh") {
		t.Fatalf("vm profile: %v", err)
	}
	if _, err := Parse("mine", "x.toml", []byte("ssh = { hosts = [\"a\"], keys = [\"k\"], agent = true }\n")); err == nil {
		t.Fatal("unknown ssh key accepted")
	}
	// A template never reaches the agent: the key is refused by name.
	_, err = templates.ParseManifest("template.toml", []byte(user))
	var ne *templates.NetworkError
	if !errors.As(err, &ne) || ne.Key != "ssh" {
		t.Fatalf("template with ssh: %v", err)
	}
}
