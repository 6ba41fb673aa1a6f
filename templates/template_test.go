package templates

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/strictoml"
)

func TestParseManifestFull(t *testing.T) {
	data := `# comment
description = "Full"
image = "images:debian/12/cloud"
user = "dev"
cpu = "2"
memory = "2GiB"
disk = "20GiB"
require_vm = true
autostart = true
bootstrap_role = "web"
tools = ["git", "rg"]
command = ["bash", "-l"]
`
	tp, err := ParseManifest("t/template.toml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := &Template{Description: "Full", Image: "images:debian/12/cloud", User: "dev", CPU: "2",
		Memory: "2GiB", Disk: "20GiB", RequireVM: true, Autostart: true, BootstrapRole: "web",
		Tools: []string{"git", "rg"}, Command: []string{"bash", "-l"}}
	if !reflect.DeepEqual(tp, want) {
		t.Errorf("got  %+v\nwant %+v", tp, want)
	}
}

func TestParseManifestUnknownKey(t *testing.T) {
	_, err := ParseManifest("t/template.toml", []byte("description = \"x\"\n\nimage_url = \"y\"\n"))
	var uk *strictoml.UnknownKeyError
	if !errors.As(err, &uk) {
		t.Fatalf("err = %v (%T), want *strictoml.UnknownKeyError", err, err)
	}
	if !strings.HasPrefix(err.Error(), "t/template.toml:3:") || !strings.Contains(err.Error(), "image_url") {
		t.Errorf("error %q does not name file:line and key", err)
	}
	var ne *NetworkError
	if errors.As(err, &ne) {
		t.Errorf("image_url is not a network key: %v", err)
	}
}

func TestParseManifestBadType(t *testing.T) {
	_, err := ParseManifest("t/template.toml", []byte("description = \"x\"\ncpu = 2\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "t/template.toml:2:") {
		t.Errorf("err = %v, want t/template.toml:2: ...", err)
	}
}

func TestParseManifestNetworkKeys(t *testing.T) {
	for _, tc := range []struct {
		data string
		line int
	}{
		{"network = \"lan\"\n", 1},
		{"description = \"x\"\nnetwork = \"lan\"\n", 2},
		{"description = \"x\"\nNETWORK = \"lan\"\n", 2},
		{"BOX_NETWORK = \"lan\"\n", 1},
		{"bridge = \"br0\"\n", 1},
		{"acl = \"open\"\n", 1},
		{"nic = \"eth0\"\n", 1},
		{"net = \"host\"\n", 1},
		{"dns = \"1.1.1.1\"\n", 1},
		{"firewall = false\n", 1},
		{"network_mode = \"host\"\n", 1},
		{"host_network = true\n", 1},
		{"proxy = \"http://x\"\n", 1},
		{"description = \"x\"\n\n[network]\nmode = \"lan\"\n", 3},
		{"[[nic]]\nname = \"eth1\"\n", 1},
		{"network.mode = \"lan\"\n", 1},
	} {
		_, err := ParseManifest("t/template.toml", []byte(tc.data))
		var ne *NetworkError
		if !errors.As(err, &ne) {
			t.Errorf("%q: err = %v (%T), want *NetworkError", tc.data, err, err)
			continue
		}
		if ne.File != "t/template.toml" || ne.Line != tc.line {
			t.Errorf("%q: NetworkError at %s:%d, want line %d", tc.data, ne.File, ne.Line, tc.line)
		}
		if !strings.Contains(err.Error(), "templates cannot choose networking") {
			t.Errorf("%q: message %q does not say templates cannot choose networking", tc.data, err)
		}
		if !strings.Contains(ne.Hint(), "--network") {
			t.Errorf("hint %q", ne.Hint())
		}
	}
}

func TestNetworkErrorMessage(t *testing.T) {
	e := &NetworkError{File: "f", Key: "net"}
	if got, want := e.Error(), `f: key "net": templates cannot choose networking`; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	e.Line = 4
	if got, want := e.Error(), `f:4: key "net": templates cannot choose networking`; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestIsNetworkKey(t *testing.T) {
	for _, k := range []string{"network", "NETWORK", "BOX_NETWORK", "box_network", "BOX_NET", "BOX_BRIDGE", "BOX_ACL", "BOX_NIC",
		"BOX_DNS", "BOX_FIREWALL", "BOX_PORT", "BOX_EXPOSE", "BOX_PROXY", "BOX_PROFILE", "NIC_NAME", "BOX_NETWORK_MODE",
		"HOST_NETWORK", "MYNETWORKS", "BOX_HTTP_PROXY", "network.mode"} {
		if !isNetworkKey(k) {
			t.Errorf("isNetworkKey(%q) = false", k)
		}
	}
	for _, k := range BoxEnvKeys() {
		if isNetworkKey(k) {
			t.Errorf("allowed key %q counted as a network key", k)
		}
	}
	for _, k := range []string{"description", "image", "user", "cpu", "memory", "disk", "tools", "command", "BOX_FOO", "NETFLIX_X"} {
		if isNetworkKey(k) {
			t.Errorf("isNetworkKey(%q) = true", k)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := []Template{
		{},
		{Image: "images:debian/12/cloud", User: "dev"},
		{Image: "local-img", User: "_svc"},
		{CPU: "1"}, {CPU: "1024"}, {Memory: "512MiB"}, {Disk: "60GB"}, {Memory: "1B"},
		{Tools: []string{"g++", "python3.12", "node"}},
		{Command: []string{"bash", "-c", "echo $HOME; rm -rf /tmp/x"}},
	}
	for _, tp := range ok {
		if err := tp.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", tp, err)
		}
	}
	bad := []struct {
		t    Template
		want string
	}{
		{Template{Image: "images:debian/12"}, "user is not"},
		{Template{User: "Root"}, `user "Root"`},
		{Template{User: "-x"}, `user "-x"`},
		{Template{User: "a b"}, `user "a b"`},
		{Template{Image: "-img", User: "u"}, `image "-img"`},
		{Template{Image: "img; rm -rf /", User: "u"}, "image"},
		{Template{CPU: "0"}, `cpu "0"`},
		{Template{CPU: "1025"}, `cpu "1025"`},
		{Template{CPU: "+2"}, `cpu "+2"`},
		{Template{CPU: "02"}, `cpu "02"`},
		{Template{CPU: "2.5"}, `cpu "2.5"`},
		{Template{Memory: "8G"}, `memory "8G"`},
		{Template{Memory: "0MiB"}, `memory "0MiB"`},
		{Template{Disk: "8 GiB"}, `disk "8 GiB"`},
		{Template{Tools: []string{"/usr/bin/git"}}, "tool"},
		{Template{Tools: []string{"../git"}}, "tool"},
		{Template{Tools: []string{"--help"}}, "tool"},
		{Template{Tools: []string{strings.Repeat("a", 129)}}, "tool"},
		{Template{Command: []string{""}}, "program name is empty"},
		{Template{Command: []string{"a", "b\x00c"}}, "NUL"},
	}
	for _, tc := range bad {
		err := tc.t.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error with %q", tc.t, err, tc.want)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"blank", "claude", "my-tmpl_2", "X"} {
		if err := ValidName(n); err != nil {
			t.Errorf("ValidName(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"../../etc", "/etc", "a/b", ".", "..", "", "-x", ".hidden", "a b", "a\\b", "x\n", strings.Repeat("a", 64)} {
		if err := ValidName(n); err == nil {
			t.Errorf("ValidName(%q) accepted", n)
		}
	}
}

func TestBuiltins(t *testing.T) {
	for _, tc := range []struct{ name, desc, user string }{
		{"blank", "A bare box: a shell and nothing else", "dev"},
		{"claude", "Claude Code, creds-free", "claude"},
	} {
		tp, err := Load(tc.name, "")
		if err != nil {
			t.Fatalf("Load(%s): %v", tc.name, err)
		}
		if tp.Name != tc.name || tp.Source != "built-in" || tp.Description != tc.desc || tp.User != tc.user || tp.Image == "" {
			t.Errorf("%s: %+v", tc.name, tp)
		}
		if !strings.HasPrefix(tp.UserData, "#cloud-config\n") || !strings.Contains(tp.UserData, "name: "+tc.user) {
			t.Errorf("%s: user-data not loaded or its user does not match BOX_USER: %q", tc.name, tp.UserData)
		}
	}
	c, _ := Load("claude", "")
	if c.Notes == "" || len(c.Command) == 0 || c.Command[0] != "claude" {
		t.Errorf("claude: notes %q command %v", c.Notes, c.Command)
	}
	b, _ := Load("blank", "")
	if b.Notes != "" {
		t.Errorf("blank has notes %q", b.Notes)
	}
}

func TestLoadRefusesPaths(t *testing.T) {
	root := t.TempDir()
	user := filepath.Join(root, "templates")
	// Directories the names would reach, were they paths.
	mkTemplate(t, root, "outside", map[string]string{ManifestTOML: "description = \"outside\"\n"})
	mkTemplate(t, user, "a", map[string]string{ManifestTOML: ""})
	mkTemplate(t, filepath.Join(user, "a"), "b", map[string]string{ManifestTOML: ""})
	for _, n := range []string{"../../etc", "/etc", "a/b", ".", "..", "../outside", ""} {
		tp, err := Load(n, user)
		if err == nil {
			t.Errorf("Load(%q) = %+v, want refused", n, tp)
			continue
		}
		if !strings.Contains(err.Error(), "invalid template name") {
			t.Errorf("Load(%q): %v, want an invalid-name error", n, err)
		}
	}
}

func TestLoadNotFound(t *testing.T) {
	if _, err := Load("nope", t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func mkTemplate(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(d, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestUserTemplates(t *testing.T) {
	cfg := t.TempDir()
	dir := Dir(cfg)
	if dir != filepath.Join(cfg, "box", "templates") {
		t.Fatalf("Dir = %q", dir)
	}
	userData := "#cloud-config\n# kept verbatim: ${NOT_EXPANDED} $(not run)\nusers:\n  - name: me\r\n"
	notes := "Notes\n\twith tabs and $(dollar) `ticks`\n"
	over := mkTemplate(t, dir, "blank", map[string]string{
		ManifestEnv:  "BOX_DESCRIPTION=\"my blank\"\nBOX_IMAGE=\"images:debian/13/cloud\"\nBOX_USER=\"me\"\n",
		UserDataFile: userData,
		NotesFile:    notes,
		"README.md":  "ignored",
	})
	extra := mkTemplate(t, dir, "extra", map[string]string{ManifestTOML: "description = \"extra one\"\ntools = [\"go\"]\n"})
	os.WriteFile(filepath.Join(dir, "stray-file"), []byte("not a template"), 0o644)

	b, err := Load("blank", dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Source != over || b.Description != "my blank" || b.User != "me" || b.Image != "images:debian/13/cloud" {
		t.Errorf("user blank: %+v", b)
	}
	if b.UserData != userData || b.Notes != notes {
		t.Errorf("not verbatim:\nuser-data %q\nnotes %q", b.UserData, b.Notes)
	}

	list, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tp := range list {
		got = append(got, tp.Name+"|"+tp.Source+"|"+tp.Description)
	}
	want := []string{"blank|" + over + "|my blank", "claude|built-in|Claude Code, creds-free",
		"codex|built-in|OpenAI Codex CLI, creds-free", "extra|" + extra + "|extra one",
		"grok|built-in|xAI Grok CLI, creds-free", "kimi|built-in|Moonshot Kimi CLI, creds-free"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List =\n%v\nwant\n%v", got, want)
	}
}

func TestListBuiltinsOnly(t *testing.T) {
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "absent")} {
		list, err := List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tp := range list {
			names = append(names, tp.Name)
			if tp.Description == "" || tp.Source != "built-in" {
				t.Errorf("List(%q): %s: description %q, source %q", dir, tp.Name, tp.Description, tp.Source)
			}
		}
		if want := []string{"blank", "claude", "codex", "grok", "kimi"}; !reflect.DeepEqual(names, want) {
			t.Errorf("List(%q) = %v, want %v", dir, names, want)
		}
	}
}

func TestLoadBothManifests(t *testing.T) {
	dir := t.TempDir()
	mkTemplate(t, dir, "twice", map[string]string{ManifestTOML: "", ManifestEnv: ""})
	_, err := Load("twice", dir)
	if err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("err = %v, want a both-manifests error", err)
	}
}

func TestLoadNoManifest(t *testing.T) {
	dir := t.TempDir()
	mkTemplate(t, dir, "empty", map[string]string{UserDataFile: "#cloud-config\n"})
	_, err := Load("empty", dir)
	if err == nil || !strings.Contains(err.Error(), "no "+ManifestTOML) {
		t.Errorf("err = %v", err)
	}
}

func TestListFailsLoudly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"netenv", map[string]string{ManifestEnv: "BOX_DESCRIPTION=\"x\"\nBOX_NETWORK=lan\n"}, "box.env:2: key \"BOX_NETWORK\": templates cannot choose networking"},
		{"nettoml", map[string]string{ManifestTOML: "network = \"lan\"\n"}, "template.toml:1: key \"network\": templates cannot choose networking"},
		{"typo", map[string]string{ManifestTOML: "descripton = \"x\"\n"}, "template.toml:1: unknown key"},
		{"both", map[string]string{ManifestTOML: "", ManifestEnv: ""}, "both"},
	} {
		dir := t.TempDir()
		mkTemplate(t, dir, "fine", map[string]string{ManifestTOML: "description = \"fine\"\n"})
		d := mkTemplate(t, dir, tc.name, tc.files)
		_, err := List(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: List error %v, want %q", tc.name, err, tc.want)
		}
		if tc.name != "both" && err != nil && !strings.Contains(err.Error(), d) {
			t.Errorf("%s: error %q does not name the template's directory", tc.name, err)
		}
	}
}

// A user file named like a template (not a directory) does not shadow the built-in.
func TestLoadUserFileNotDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "claude"), []byte("BOX_NETWORK=lan"), 0o644)
	tp, err := Load("claude", dir)
	if err != nil || tp.Source != "built-in" {
		t.Errorf("Load = %+v, %v", tp, err)
	}
}

// Hidden directories in the user's template dir (.git) are not templates.
func TestListSkipsHidden(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts, err := List(dir)
	if err != nil {
		t.Fatalf("List with a .git dir: %v", err)
	}
	for _, tp := range ts {
		if strings.HasPrefix(tp.Name, ".") {
			t.Errorf("hidden entry listed: %s", tp.Name)
		}
	}
}
