package templates

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/heavy-duty/box/envaudit"
	"gopkg.in/yaml.v3"
)

// cloudConfig is the part of a cloud-config the shipped templates rely on.
type cloudConfig struct {
	Users []struct {
		Name       string `yaml:"name"`
		Shell      string `yaml:"shell"`
		Sudo       any    `yaml:"sudo"`
		LockPasswd *bool  `yaml:"lock_passwd"`
	} `yaml:"users"`
	Packages   []string `yaml:"packages"`
	Runcmd     []any    `yaml:"runcmd"`
	WriteFiles []struct {
		Path    string `yaml:"path"`
		Owner   string `yaml:"owner"`
		Content string `yaml:"content"`
	} `yaml:"write_files"`
}

// credentialKeys of a cloud-config user would put a credential in the box: the
// templates are creds-free.
var credentialKeys = []string{"passwd", "hashed_passwd", "plain_text_passwd", "ssh_authorized_keys", "ssh_import_id", "ssh_keys"}

// secretWord returns the first word of s that the env audit's secret check flags (a
// token prefix, a PEM key, a URL with credentials, a long high-entropy string).
func secretWord(s string) string {
	if strings.Contains(s, "-----BEGIN") && strings.Contains(s, "PRIVATE KEY") {
		return "a PEM private key"
	}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" \t\n\"'=[],", r) }) {
		if why := envaudit.Check("", w); why != "" {
			return w + ": " + why
		}
	}
	return ""
}

// Every shipped template's user-data is valid cloud-config: it starts with the
// #cloud-config header cloud-init requires, parses as YAML into cloud-init's shape,
// creates the template's user (the one box enters the box as), and carries no
// credential.
func TestShippedUserDataIsCloudConfig(t *testing.T) {
	list, err := List("")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 5 {
		t.Fatalf("%d shipped templates, want blank, claude, codex, grok, kimi at least", len(list))
	}
	for _, tp := range list {
		t.Run(tp.Name, func(t *testing.T) {
			raw, err := fs.ReadFile(builtin, tp.Name+"/"+UserDataFile)
			if err != nil {
				t.Fatalf("no %s: a vm template needs user-data that creates its user: %v", UserDataFile, err)
			}
			if tp.UserData != string(raw) {
				t.Error("Load does not pass user-data verbatim")
			}
			if first, _, _ := strings.Cut(tp.UserData, "\n"); first != "#cloud-config" {
				t.Errorf("first line %q, want #cloud-config (cloud-init ignores the file otherwise)", first)
			}
			var cc cloudConfig
			dec := yaml.NewDecoder(strings.NewReader(tp.UserData))
			if err := dec.Decode(&cc); err != nil {
				t.Fatalf("user-data is not valid YAML for cloud-config: %v", err)
			}
			var top map[string]any
			if err := yaml.Unmarshal(raw, &top); err != nil {
				t.Fatal(err)
			}
			for k := range top {
				if !cloudConfigKeys[k] {
					t.Errorf("top-level key %q is not a cloud-config module box knows", k)
				}
			}
			var names []string
			for _, u := range cc.Users {
				names = append(names, u.Name)
			}
			if len(cc.Users) == 0 || cc.Users[0].Name != tp.User {
				t.Errorf("users %v: the first must be the template's user %q", names, tp.User)
			}
			for _, f := range cc.WriteFiles {
				if strings.HasPrefix(f.Path, "/home/") && !strings.HasPrefix(f.Path, "/home/"+tp.User+"/") {
					t.Errorf("write_files %s: outside the user's home", f.Path)
				}
			}
			var users struct {
				Users []map[string]any `yaml:"users"`
			}
			if err := yaml.Unmarshal(raw, &users); err != nil {
				t.Fatal(err)
			}
			for _, u := range users.Users {
				for _, k := range credentialKeys {
					if _, ok := u[k]; ok {
						t.Errorf("user %v sets %s: templates are creds-free", u["name"], k)
					}
				}
			}
			if w := secretWord(tp.UserData); w != "" {
				t.Errorf("user-data holds a secret-looking word (%s): templates are creds-free", w)
			}
		})
	}
}

// cloudConfigKeys are the cloud-config modules the shipped templates may use.
var cloudConfigKeys = map[string]bool{
	"users": true, "packages": true, "package_update": true, "package_upgrade": true,
	"runcmd": true, "write_files": true, "bootcmd": true,
}

// The check catches what it is for: a user-data that is not YAML, one without the
// header, one that names another user.
func TestCloudConfigCheckCatches(t *testing.T) {
	var cc cloudConfig
	if err := yaml.Unmarshal([]byte("#cloud-config\nusers:\n  - name: dev\n  bad: [\n"), &cc); err == nil {
		t.Error("broken YAML parsed")
	}
	if err := yaml.Unmarshal([]byte("#cloud-config\nusers: dev\n"), &cc); err == nil {
		t.Error("users as a string parsed into a list")
	}
	if secretWord("runcmd:\n  - export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop\n") == "" {
		t.Error("an API key in runcmd is not flagged")
	}
	if secretWord("runcmd:\n  - [git, clone, \"https://me:ghp_abcdefghijkl@github.com/x/y\"]\n") == "" {
		t.Error("a URL with a token is not flagged")
	}
}
