package strictoml

import (
	"errors"
	"strings"
	"testing"
)

type mount struct {
	Path string `toml:"path"`
	Mode string `toml:"mode"`
}

type target struct {
	Name   string   `toml:"name"`
	CPU    string   `toml:"cpu"`
	On     bool     `toml:"on"`
	Tags   []string `toml:"tags"`
	Mounts []mount  `toml:"mounts"`
}

func TestDecodeValid(t *testing.T) {
	data := `# a comment
name = "x"
cpu = "2"
on = true
tags = ["a", "b"]

[[mounts]]
path = "/a"

[[mounts]]
path = "/b"
mode = "rw"
`
	var v target
	if err := Decode("ok.toml", []byte(data), &v); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if v.Name != "x" || v.CPU != "2" || !v.On || len(v.Tags) != 2 || len(v.Mounts) != 2 || v.Mounts[1].Mode != "rw" {
		t.Fatalf("decoded %+v", v)
	}
}

func TestDecodeUnknownKey(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		line       int
		key, last  string
	}{
		{"top level", "name = \"x\"\n\nbogus = 1\n", 3, "bogus", "bogus"},
		{"quoted key", "name = \"x\"\n\"bogus\" = 1\n", 2, "bogus", "bogus"},
		{"in mounts", "name = \"x\"\n[[mounts]]\npath = \"/a\"\nsize = 3\n", 4, "mounts.size", "size"},
		{"in second mount", "[[mounts]]\npath = \"/a\"\n[[mounts]]\npath = \"/b\"\nextra = \"y\"\n", 5, "mounts.extra", "extra"},
		{"unknown table", "name = \"x\"\n[network]\nmode = \"lan\"\n", 2, "network", "network"},
		{"unknown array table", "name = \"x\"\n\n[[nic]]\nname = \"eth0\"\n", 3, "nic", "nic"},
		// Regression: the key's name also exists at top level, earlier in the file; the
		// error must point at the line inside [[mounts]], not at line 1.
		{"same name as top-level key", "cpu = \"2\"\nname = \"x\"\n[[mounts]]\npath = \"/a\"\ncpu = \"3\"\n", 5, "mounts.cpu", "cpu"},
		{"after a multi-line string", "name = \"\"\"\nbogus = 1\n\"\"\"\nbogus = 2\n", 4, "bogus", "bogus"},
		{"after a literal multi-line string", "name = '''\n[[mounts]]\nsize = 1\n'''\n[[mounts]]\nsize = 2\n", 6, "mounts.size", "size"},
		{"inline table", "name = \"x\"\nmounts = [{path = \"/a\", size = 1}]\n", 2, "mounts.size", "size"},
		{"dotted key", "name = \"x\"\nnetwork.mode = \"lan\"\n", 2, "network.mode", "mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v target
			err := Decode("f.toml", []byte(tc.data), &v)
			var uk *UnknownKeyError
			if !errors.As(err, &uk) {
				t.Fatalf("err = %v (%T), want *UnknownKeyError", err, err)
			}
			if uk.File != "f.toml" || uk.Line != tc.line || uk.Key != tc.key || uk.Last() != tc.last {
				t.Errorf("got file %q line %d key %q last %q; want f.toml line %d key %q last %q",
					uk.File, uk.Line, uk.Key, uk.Last(), tc.line, tc.key, tc.last)
			}
			msg := err.Error()
			if !strings.Contains(msg, "f.toml:") || !strings.Contains(msg, tc.key) || !strings.Contains(msg, "unknown key") {
				t.Errorf("message %q does not name the file, the line and the key", msg)
			}
		})
	}
}

func TestUnknownKeyErrorWithoutLine(t *testing.T) {
	e := &UnknownKeyError{File: "f.toml", Key: "a.b"}
	if got, want := e.Error(), `f.toml: unknown key "a.b"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if e.Last() != "b" {
		t.Errorf("Last() = %q", e.Last())
	}
	e.Line = 7
	if got, want := e.Error(), `f.toml:7: unknown key "a.b"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestDecodeBadType(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"string given int", "name = \"x\"\ncpu = 2\n", "f.toml:2:"},
		{"bool given string", "\n\non = \"yes\"\n", "f.toml:3:"},
		{"in mounts", "[[mounts]]\npath = \"/a\"\n[[mounts]]\npath = 5\n", "f.toml:4:"},
		{"list given string", "tags = \"a\"\n", "f.toml:1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v target
			err := Decode("f.toml", []byte(tc.data), &v)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q does not start with %q", err, tc.want)
			}
		})
	}
}

func TestDecodeSyntaxError(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"name = \"x\"\ncpu = \n", "f.toml:2:"},
		{"name = \"unterminated\n", "f.toml:1:"},
		{"a = 1\na = 2\n", "f.toml:2:"},
		{"tags = [\n", "f.toml:1:"},
	} {
		var v target
		err := Decode("f.toml", []byte(tc.data), &v)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Decode(%q) = %v, want an error starting %q", tc.data, err, tc.want)
		}
	}
}

// FuzzDecode: Decode never panics, is deterministic, and an error from it always names
// the file; an UnknownKeyError's key is really absent from the target.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "name = \"x\"\n", "bogus = 1\n", "[[mounts]]\npath = \"/a\"\nsize = 1\n", "cpu = 2\n", "[a.b]\nc = 1\n"} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"name": true, "cpu": true, "on": true, "tags": true, "mounts": true, "mounts.path": true, "mounts.mode": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b target
		errA := Decode("fz.toml", data, &a)
		errB := Decode("fz.toml", data, &b)
		if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
			t.Fatalf("not deterministic: %v vs %v", errA, errB)
		}
		if errA == nil {
			return
		}
		if !strings.HasPrefix(errA.Error(), "fz.toml") {
			t.Fatalf("error does not name the file: %v", errA)
		}
		var uk *UnknownKeyError
		if errors.As(errA, &uk) {
			if known[uk.Key] {
				t.Fatalf("known key %q reported unknown", uk.Key)
			}
			if uk.Line < 0 || uk.Line > strings.Count(string(data), "\n")+1 {
				t.Fatalf("line %d out of range", uk.Line)
			}
		}
	})
}
