package profiles

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/heavy-duty/box/templates"
)

func TestCheckKeysProfiles(t *testing.T) {
	cases := []struct {
		body string
		use  Use
		want string // "" accepted, else the refused key
	}{
		{`backend = "vm"`, UseVM, ""},
		{"backend = \"vm\"\nnetwork = \"internet\"", UseVM, ""},
		{"backend = \"vm\"\nnetwork = \"none\"", UseVM, "network"},
		{"backend = \"vm\"\nenv = [\"X\"]", UseVM, "env"},
		{"backend = \"vm\"\ntools = [\"git\"]", UseVM, "tools"},
		{"backend = \"vm\"\ncommand = [\"x\"]", UseVM, "command"},
		{"backend = \"vm\"\nauth_passthrough = true", UseVM, "auth_passthrough"},
		{"backend = \"vm\"\n[[mounts]]\npath = \"/srv\"", UseVM, "mounts"},
		{"backend = \"vm\"\ncpu = \"4\"\nmemory = \"8GiB\"\ndisk = \"9GiB\"", UseVM, ""},
		{"packages = [\"nixpkgs#hello\"]\npath = \"minimal\"\nnix = \"store\"", UseBox, ""},
		{"cpu = \"4\"\npids = 512", UseRun, ""},
		{"memory = \"8GiB\"", UseBox, ""},
		{"syscalls = [\"ptrace\"]\nprotect_drop = [\".vscode\"]\nallow = [\"github.com\"]\nnetwork = \"allowlist\"", UseBox, ""},
		{"disk = \"8GiB\"", UseRun, "disk"},
		{"auth_passthrough = true", UseRun, ""},
		{"auth_passthrough = true", UseBox, "auth_passthrough"},
		{"network = \"full\"\nenv = [\"A\"]\ntools = [\"git\"]\ncommand = [\"x\"]\n[[mounts]]\npath = \"/srv\"", UseBox, ""},
	}
	for _, c := range cases {
		p, err := Parse("p", "/cfg/p.toml", []byte(c.body))
		if err != nil {
			t.Fatalf("%q: %v", c.body, err)
		}
		err = CheckKeys(c.use, p, nil)
		var ke *KeyError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q as %s: %v", c.body, c.use, err)
		case c.want != "" && !errors.As(err, &ke):
			t.Errorf("%q as %s: err = %v, want a refusal of %s", c.body, c.use, err, c.want)
		case c.want != "" && (ke.Key != c.want || !strings.Contains(err.Error(), `profile "p" (/cfg/p.toml) sets `+c.want+", which the "+string(c.use)+" backend does not honour") || ke.Hint() == ""):
			t.Errorf("%q as %s: %v (hint %q)", c.body, c.use, err, ke.Hint())
		}
	}
}

func TestCheckKeysTemplates(t *testing.T) {
	vmish := &templates.Template{Name: "v", Source: "/t/v", File: "/t/v/template.toml", Image: "img", User: "u", CPU: "2", UserData: "#cloud-config\n", Tools: []string{"git"}}
	for _, use := range []Use{UseRun, UseBox, UseVM} {
		if err := CheckKeys(use, nil, vmish); err != nil {
			t.Errorf("%s: a template's other-backend keys refused: %v", use, err)
		}
	}
	for _, c := range []struct {
		t    templates.Template
		use  Use
		want string
	}{
		{templates.Template{RequireVM: true}, UseRun, "require_vm"},
		{templates.Template{RequireVM: true}, UseBox, "require_vm"},
		{templates.Template{RequireVM: true}, UseVM, ""},
		{templates.Template{Autostart: true}, UseBox, "autostart"},
		{templates.Template{BootstrapRole: "web"}, UseRun, "bootstrap_role"},
		{templates.Template{Autostart: true}, UseVM, ""},
		{templates.Template{BootstrapRole: "web", File: "/t/x/box.env", Source: "/t/x"}, UseVM, ""}, // boxes.RoleError refuses it at mint
	} {
		c.t.Name = "x"
		if c.t.File == "" {
			c.t.File, c.t.Source = "/t/x/template.toml", "/t/x"
		}
		err := CheckKeys(c.use, nil, &c.t)
		var ke *KeyError
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v as %s: %v", c.t, c.use, err)
			}
			continue
		}
		if !errors.As(err, &ke) || ke.Key != c.want || !strings.Contains(err.Error(), c.t.File) || !strings.Contains(err.Error(), string(c.use)+" backend") {
			t.Errorf("%+v as %s: err = %v, want %s refused", c.t, c.use, err, c.want)
		}
	}
}

// Every key of the profile and template models is in the tables, with a decision for
// every use: the table is complete, so no key is accepted and ignored by omission.
func TestKeyTablesComplete(t *testing.T) {
	var profileKeys []string // every key the TOML model takes
	rt := reflect.TypeOf(Profile{})
	for i := 0; i < rt.NumField(); i++ {
		if tag := rt.Field(i).Tag.Get("toml"); tag != "" && tag != "-" {
			profileKeys = append(profileKeys, tag)
		}
	}
	templateKeys := []string{"description", "image", "user", "cpu", "memory", "disk", "require_vm", "autostart", "bootstrap_role", "tools", "command", "user_data", "notes", "agent"}
	check := func(what string, rules []keyRule, keys []string) {
		have := map[string]keyRule{}
		for _, r := range rules {
			have[r.key] = r
		}
		for _, k := range keys {
			r, ok := have[k]
			if !ok {
				t.Errorf("%s key %s is not in the table", what, k)
				continue
			}
			for _, use := range []Use{UseRun, UseBox, UseVM} {
				u, ok := use.index()
				if !ok {
					t.Fatalf("use %s has no index", use)
				}
				if r.by[u] == undecided {
					t.Errorf("%s key %s: no decision for %s", what, k, use)
				}
				if r.by[u] == refused && r.why[u] == "" {
					t.Errorf("%s key %s: refused by %s without a reason", what, k, use)
				}
			}
		}
		if len(rules) != len(keys) {
			t.Errorf("%s table has %d keys, the model %d", what, len(rules), len(keys))
		}
	}
	check("profile", ProfileKeys, profileKeys)
	check("template", TemplateKeys, templateKeys)
}

// A use without a column in the tables is refused, not given every key; a hole in a
// table (no decision) refuses the key rather than honour it.
func TestCheckKeysFailsClosed(t *testing.T) {
	p, err := Parse("p", "/cfg/p.toml", []byte(`description = "d"`))
	if err != nil {
		t.Fatal(err)
	}
	var ue *UnknownUseError
	if err := CheckKeys(Use("bwrap-ish"), p, nil); !errors.As(err, &ue) || ue.Use != "bwrap-ish" {
		t.Errorf("unknown use: err = %v, want an UnknownUseError", err)
	}
	if err := CheckKeys(Use("bwrap-ish"), nil, nil); !errors.As(err, &ue) {
		t.Errorf("unknown use, nothing to check: err = %v, want an UnknownUseError", err)
	}
	hole := keyRule{key: "description", by: [nUses]honour{iRun: honoured, iVM: honoured}}
	if hole.refuses(iRun) || !hole.refuses(iBox) || hole.refuses(iVM) {
		t.Errorf("a rule with no decision for %s must refuse there and only there: %+v", UseBox, hole)
	}
}
