package templates

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseBoxEnvAllKeys(t *testing.T) {
	data := `# an upstream box.env
BOX_DESCRIPTION="Claude Code, creds-free"
BOX_IMAGE="images:debian/13/cloud"
BOX_USER="claude"
BOX_CPU="4"
BOX_MEMORY="8GiB"
BOX_DISK="60GiB"
BOX_REQUIRE_VM="true"
BOX_AUTOSTART=1
BOX_BOOTSTRAP_ROLE='web'
`
	tp, err := ParseBoxEnv("t/box.env", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := &Template{Description: "Claude Code, creds-free", Image: "images:debian/13/cloud", User: "claude",
		CPU: "4", Memory: "8GiB", Disk: "60GiB", RequireVM: true, Autostart: true, BootstrapRole: "web"}
	if !reflect.DeepEqual(tp, want) {
		t.Errorf("got  %+v\nwant %+v", tp, want)
	}
	// Every allowed key, and only those, is listed.
	wantKeys := []string{"BOX_AUTOSTART", "BOX_BOOTSTRAP_ROLE", "BOX_CPU", "BOX_DESCRIPTION", "BOX_DISK",
		"BOX_IMAGE", "BOX_MEMORY", "BOX_REQUIRE_VM", "BOX_USER"}
	if got := BoxEnvKeys(); !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("BoxEnvKeys = %v", got)
	}
}

func TestParseBoxEnvEachKeyAlone(t *testing.T) {
	for key, val := range map[string]string{
		"BOX_DESCRIPTION": `"x y"`, "BOX_USER": "dev", "BOX_CPU": "2", "BOX_MEMORY": "1GiB",
		"BOX_DISK": "5GB", "BOX_REQUIRE_VM": "yes", "BOX_AUTOSTART": "no", "BOX_BOOTSTRAP_ROLE": "db",
		"BOX_IMAGE": "img",
	} {
		data := key + "=" + val + "\n"
		if key == "BOX_IMAGE" {
			data += "BOX_USER=u\n"
		}
		if _, err := ParseBoxEnv("box.env", []byte(data)); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

func TestParseBoxEnvValueForms(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`BOX_DESCRIPTION="double quoted"`, "double quoted"},
		{`BOX_DESCRIPTION='single quoted'`, "single quoted"},
		{`BOX_DESCRIPTION=bare`, "bare"},
		{`BOX_DESCRIPTION=`, ""},
		{`BOX_DESCRIPTION=""`, ""},
		{`BOX_DESCRIPTION="with 'single' inside"`, "with 'single' inside"},
		{`BOX_DESCRIPTION='with "double" and $HOME literally'`, `with "double" and $HOME literally`},
		{`BOX_DESCRIPTION="x" # trailing comment`, "x"},
		{`BOX_DESCRIPTION='x'#comment`, "x"},
		{`  BOX_DESCRIPTION="indented"  `, "indented"},
		{`export BOX_DESCRIPTION="exported"`, "exported"},
		{`BOX_DESCRIPTION=a=b,c.d:e/f@g%h+i-j`, "a=b,c.d:e/f@g%h+i-j"},
		{`BOX_DESCRIPTION="a # not a comment"`, "a # not a comment"},
	} {
		tp, err := ParseBoxEnv("box.env", []byte(tc.line+"\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if tp.Description != tc.want {
			t.Errorf("%s: got %q, want %q", tc.line, tp.Description, tc.want)
		}
	}
}

func TestParseBoxEnvBools(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "TRUE": true, "yes": true, "0": false, "false": false, "no": false, `""`: false} {
		tp, err := ParseBoxEnv("box.env", []byte("BOX_REQUIRE_VM="+v))
		if err != nil || tp.RequireVM != want {
			t.Errorf("BOX_REQUIRE_VM=%s: %+v, %v", v, tp, err)
		}
	}
	_, err := ParseBoxEnv("box.env", []byte("BOX_AUTOSTART=maybe\n"))
	if err == nil || !strings.Contains(err.Error(), "box.env:1:") || !strings.Contains(err.Error(), "BOX_AUTOSTART") {
		t.Errorf("bad bool: %v", err)
	}
}

func TestParseBoxEnvLayout(t *testing.T) {
	data := "\r\n# comment\r\n   # indented comment\r\n\r\nBOX_DESCRIPTION=\"crlf\"\r\nBOX_USER=dev\r\n\t\r\nBOX_CPU='2'\r\n"
	tp, err := ParseBoxEnv("box.env", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if tp.Description != "crlf" || tp.User != "dev" || tp.CPU != "2" {
		t.Errorf("CRLF: %+v", tp)
	}
	// No trailing newline, and an empty file.
	if tp, err := ParseBoxEnv("box.env", []byte("BOX_USER=dev")); err != nil || tp.User != "dev" {
		t.Errorf("no final newline: %+v %v", tp, err)
	}
	if tp, err := ParseBoxEnv("box.env", nil); err != nil || !reflect.DeepEqual(tp, &Template{}) {
		t.Errorf("empty: %+v %v", tp, err)
	}
}

func TestParseBoxEnvRefused(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		line       int
		want       string
	}{
		{"unknown key", "BOX_DESCRIPTION=\"x\"\n\n# c\nBOX_COLOR=\"red\"\n", 4, "unknown key BOX_COLOR"},
		{"lowercase known key", "box_user=dev\n", 1, "unknown key"},
		{"command substitution", "BOX_DESCRIPTION=\"$(id)\"\n", 1, "never run by a shell"},
		{"backticks", "BOX_DESCRIPTION=\"`id`\"\n", 1, "never run by a shell"},
		{"variable", "BOX_DESCRIPTION=\"$HOME\"\n", 1, "never run by a shell"},
		{"braced variable", "BOX_DESCRIPTION=\"${HOME}\"\n", 1, "never run by a shell"},
		{"backslash", "BOX_DESCRIPTION=\"a\\nb\"\n", 1, "never run by a shell"},
		{"escaped quote", "BOX_DESCRIPTION=\"a\\\"b\"\n", 1, ""},
		{"bare command substitution", "BOX_DESCRIPTION=$(id)\n", 1, "shell characters"},
		{"bare backticks", "BOX_DESCRIPTION=`id`\n", 1, "shell characters"},
		{"bare variable", "BOX_DESCRIPTION=$HOME\n", 1, "shell characters"},
		{"bare semicolon", "BOX_USER=dev;id\n", 1, "shell characters"},
		{"bare pipe", "BOX_USER=dev|id\n", 1, "shell characters"},
		{"bare ampersand", "BOX_USER=dev&\n", 1, "shell characters"},
		{"bare redirect", "BOX_USER=dev>/tmp/x\n", 1, "shell characters"},
		{"bare space", "BOX_DESCRIPTION=two words\n", 1, "shell characters"},
		{"bare glob", "BOX_DESCRIPTION=*\n", 1, "shell characters"},
		{"bare tilde", "BOX_DESCRIPTION=~root\n", 1, "shell characters"},
		{"bare quote mid", "BOX_DESCRIPTION=a\"b\"\n", 1, "shell characters"},
		{"value starts with space", "BOX_DESCRIPTION= x\n", 1, "shell characters"},
		{"unterminated double", "BOX_USER=dev\nBOX_DESCRIPTION=\"open\n", 2, "unterminated \" quote"},
		{"unterminated single", "BOX_DESCRIPTION='open\n", 1, "unterminated ' quote"},
		{"text after quote", "BOX_DESCRIPTION=\"a\"b\n", 1, "after the closing quote"},
		{"command after quote", "BOX_DESCRIPTION=\"a\"; id\n", 1, "after the closing quote"},
		{"concatenated quotes", "BOX_DESCRIPTION='a'\"b\"\n", 1, "after the closing quote"},
		{"duplicate", "BOX_CPU=2\nBOX_USER=u\nBOX_CPU=4\n", 3, "set twice (first on line 1)"},
		{"duplicate via export", "BOX_CPU=2\nexport BOX_CPU=2\n", 2, "set twice"},
		{"no equals", "BOX_DESCRIPTION=\"x\"\nBOX_USER\n", 2, "want KEY=\"value\""},
		{"shell command", "rm -rf /\n", 1, "want KEY=\"value\""},
		{"key with space", "BOX USER=dev\n", 1, "is not a KEY"},
		{"space before equals", "BOX_USER =dev\n", 1, "is not a KEY"},
		{"empty key", "=dev\n", 1, "is not a KEY"},
		{"digit key", "1BOX=dev\n", 1, "is not a KEY"},
		{"dash key", "BOX-USER=dev\n", 1, "is not a KEY"},
		{"function", "f() { id; }; BOX_USER=x\n", 1, "is not a KEY"},
		{"bad cpu", "BOX_CPU=lots\n", 0, `cpu "lots"`},
		{"bad user", "BOX_USER=Root\n", 0, "user \"Root\""},
		{"image without user", "BOX_DESCRIPTION=x\nBOX_IMAGE=\"images:debian/12\"\n", 0, "user is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := ParseBoxEnv("t/box.env", []byte(tc.data))
			if err == nil {
				t.Fatalf("accepted: %+v", tp)
			}
			if tp != nil {
				t.Errorf("template %+v returned with error", tp)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			var le *LineError
			if tc.line > 0 {
				if !errors.As(err, &le) || le.Line != tc.line || le.File != "t/box.env" {
					t.Errorf("error %v: want a *LineError at t/box.env:%d", err, tc.line)
				}
				if !strings.HasPrefix(err.Error(), "t/box.env:"+itoa(tc.line)+": ") {
					t.Errorf("error %q does not start with file:line", err)
				}
			} else if !strings.HasPrefix(err.Error(), "t/box.env: ") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestParseBoxEnvNetworkKeys(t *testing.T) {
	for _, tc := range []struct {
		data string
		line int
		key  string
	}{
		{"BOX_NETWORK=lan\n", 1, "BOX_NETWORK"},
		{"BOX_DESCRIPTION=\"x\"\n# comment\nBOX_NETWORK=\"lan\"\n", 3, "BOX_NETWORK"},
		{"export BOX_NETWORK=lan\n", 1, "BOX_NETWORK"},
		{"box_network=lan\n", 1, "box_network"},
		{"NETWORK=host\n", 1, "NETWORK"},
		{"BOX_NET=host\n", 1, "BOX_NET"},
		{"BOX_BRIDGE=br0\n", 1, "BOX_BRIDGE"},
		{"BOX_ACL=none\n", 1, "BOX_ACL"},
		{"BOX_NIC=eth0\n", 1, "BOX_NIC"},
		{"BOX_DNS=\"1.1.1.1\"\n", 1, "BOX_DNS"},
		{"BOX_FIREWALL=off\n", 1, "BOX_FIREWALL"},
		{"BOX_PORT_FORWARD=80\n", 1, "BOX_PORT_FORWARD"},
		{"BOX_PROFILE=default\n", 1, "BOX_PROFILE"},
		{"BOX_NETWORK_MODE=host\n", 1, "BOX_NETWORK_MODE"},
		{"BOX_HTTP_PROXY=x\n", 1, "BOX_HTTP_PROXY"},
		// The network key is refused even with a value that would itself be refused.
		{"BOX_NETWORK=\"$(id)\"\n", 1, "BOX_NETWORK"},
	} {
		_, err := ParseBoxEnv("t/box.env", []byte(tc.data))
		var ne *NetworkError
		if !errors.As(err, &ne) {
			t.Errorf("%q: err = %v (%T), want *NetworkError", tc.data, err, err)
			continue
		}
		if ne.Line != tc.line || ne.Key != tc.key || ne.File != "t/box.env" {
			t.Errorf("%q: %+v, want line %d key %s", tc.data, ne, tc.line, tc.key)
		}
		if !strings.Contains(err.Error(), "templates cannot choose networking") {
			t.Errorf("%q: message %q", tc.data, err)
		}
	}
}

// A box.env is read, never run: nothing in it executes, whatever it holds.
func TestParseBoxEnvNeverExecuted(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	for _, line := range []string{
		`BOX_DESCRIPTION="$(touch ` + pwned + `)"`,
		"BOX_DESCRIPTION=\"`touch " + pwned + "`\"",
		`BOX_DESCRIPTION=$(touch ` + pwned + `)`,
		"BOX_DESCRIPTION=`touch " + pwned + "`",
		`BOX_USER=x; touch ` + pwned,
		`touch ` + pwned,
		`BOX_USER="x" && touch ` + pwned,
		`BOX_USER=x || touch ` + pwned,
		`BOX_USER=$(touch ` + pwned + `)x`,
	} {
		tp, err := ParseBoxEnv("box.env", []byte(line+"\n"))
		if err == nil {
			t.Errorf("%s: accepted as %+v", line, tp)
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("%s: the file was created: box.env was executed", line)
		}
	}
	// Single quotes: a shell takes this literally, and so does box. Still nothing runs.
	tp, err := ParseBoxEnv("box.env", []byte(`BOX_DESCRIPTION='$(touch `+pwned+`)'`+"\n"))
	if err != nil || tp.Description != "$(touch "+pwned+")" {
		t.Errorf("single-quoted: %+v %v", tp, err)
	}
	// And through Load, from a user template directory.
	tdir := filepath.Join(dir, "templates")
	mkTemplate(t, tdir, "evil", map[string]string{ManifestEnv: "BOX_DESCRIPTION=\"$(touch " + pwned + ")\"\n"})
	if _, err := Load("evil", tdir); err == nil {
		t.Error("Load accepted a box.env with $(...)")
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the file was created: box.env was executed")
	}
}

func TestLineError(t *testing.T) {
	e := &LineError{File: "f", Line: 3, Msg: "bad"}
	if e.Error() != "f:3: bad" {
		t.Errorf("%q", e.Error())
	}
}
