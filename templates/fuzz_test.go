package templates

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func sameTemplate(a, b *Template) bool {
	norm := func(t Template) Template {
		if len(t.Tools) == 0 {
			t.Tools = nil
		}
		if len(t.Command) == 0 {
			t.Command = nil
		}
		return t
	}
	return reflect.DeepEqual(norm(*a), norm(*b))
}

// FuzzParseManifest: never panics, deterministic; what it accepts validates, survives a
// re-encode unchanged, and turns into a NetworkError the moment a network key is added.
// Seeds: testdata/fuzz/FuzzParseManifest, run by every plain `go test`.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte("description = \"x\"\nimage = \"img\"\nuser = \"u\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := ParseManifest("fz/template.toml", data)
		tp2, err2 := ParseManifest("fz/template.toml", data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(tp, tp2) {
			t.Fatalf("not deterministic: (%v, %v) vs (%v, %v)", tp, err, tp2, err2)
		}
		if err != nil {
			if tp != nil {
				t.Fatalf("template %+v with error %v", tp, err)
			}
			if !strings.HasPrefix(err.Error(), "fz/template.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			var ne *NetworkError
			if errors.As(err, &ne) && !strings.Contains(err.Error(), "templates cannot choose networking") {
				t.Fatalf("NetworkError without its reason: %v", err)
			}
			return
		}
		if err := tp.Validate(); err != nil {
			t.Fatalf("accepted template fails Validate: %v (%+v)", err, tp)
		}

		m := manifest{Description: tp.Description, Image: tp.Image, User: tp.User, CPU: tp.CPU,
			Memory: tp.Memory, Disk: tp.Disk, RequireVM: tp.RequireVM, Autostart: tp.Autostart,
			BootstrapRole: tp.BootstrapRole, Tools: tp.Tools, Command: tp.Command}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(m); err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := ParseManifest("fz/template.toml", buf.Bytes())
		if err != nil || !sameTemplate(tp, again) {
			t.Fatalf("round trip: %v\n%+v\n%+v\n%s", err, tp, again, buf.String())
		}

		lines := strings.Count(string(data), "\n") + 1
		for _, key := range []string{"network", "BOX_NETWORK", "bridge", "nic", "acl"} {
			_, err := ParseManifest("fz/template.toml", append(append([]byte{}, data...), "\n"+key+" = \"lan\"\n"...))
			var ne *NetworkError
			if !errors.As(err, &ne) {
				t.Fatalf("%s added to an accepted manifest: %v, want a NetworkError", key, err)
			}
			if ne.Line != lines+1 {
				t.Fatalf("%s: NetworkError on line %d, want %d", key, ne.Line, lines+1)
			}
		}
	})
}

// boxEnvKey returns the key a box.env line sets, as the parser reads it ("" for none).
func boxEnvKey(raw string) string {
	line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
	if line == "" || strings.HasPrefix(line, "#") {
		return ""
	}
	key, _, ok := strings.Cut(line, "=")
	if !ok {
		return "\x00no-equals"
	}
	if strings.HasPrefix(key, "export ") {
		key = strings.TrimSpace(strings.TrimPrefix(key, "export "))
	}
	return key
}

// quoteEnv writes v as a box.env value the parser reads back as v.
func quoteEnv(v string) string {
	if !strings.Contains(v, "'") {
		return "'" + v + "'"
	}
	return `"` + v + `"`
}

// FuzzParseBoxEnv: never panics, deterministic; what it accepts validates, sets only
// allowed keys, each once, and round-trips; a network key line anywhere before the first
// error, or prepended to anything, is a NetworkError.
// Seeds: testdata/fuzz/FuzzParseBoxEnv, run by every plain `go test`.
func FuzzParseBoxEnv(f *testing.F) {
	f.Add([]byte("BOX_DESCRIPTION=\"x\"\nBOX_IMAGE=img\nBOX_USER=u\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := ParseBoxEnv("fz/box.env", data)
		tp2, err2 := ParseBoxEnv("fz/box.env", data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(tp, tp2) {
			t.Fatalf("not deterministic: (%v, %v) vs (%v, %v)", tp, err, tp2, err2)
		}

		// Whatever the input, a network key on line 1 is refused as networking.
		_, nerr := ParseBoxEnv("fz/box.env", append([]byte("BOX_NETWORK=lan\n"), data...))
		var ne *NetworkError
		if !errors.As(nerr, &ne) || ne.Line != 1 || ne.Key != "BOX_NETWORK" {
			t.Fatalf("BOX_NETWORK on line 1: %v", nerr)
		}

		if err != nil {
			if tp != nil {
				t.Fatalf("template %+v with error %v", tp, err)
			}
			if !strings.HasPrefix(err.Error(), "fz/box.env") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := tp.Validate(); err != nil {
			t.Fatalf("accepted template fails Validate: %v (%+v)", err, tp)
		}
		if tp.Name != "" || tp.Source != "" || tp.Tools != nil || tp.Command != nil || tp.UserData != "" || tp.Notes != "" {
			t.Fatalf("box.env set a field it has no key for: %+v", tp)
		}
		seen := map[string]bool{}
		for _, raw := range strings.Split(string(data), "\n") {
			k := boxEnvKey(raw)
			if k == "" {
				continue
			}
			if _, ok := boxEnvKeys[k]; !ok {
				t.Fatalf("accepted a line setting %q", k)
			}
			if isNetworkKey(k) {
				t.Fatalf("accepted a network key %q", k)
			}
			if seen[k] {
				t.Fatalf("accepted %s twice", k)
			}
			seen[k] = true
		}

		// Round trip through a box.env written from the template.
		var b strings.Builder
		for k, v := range map[string]string{"BOX_DESCRIPTION": tp.Description, "BOX_IMAGE": tp.Image,
			"BOX_USER": tp.User, "BOX_CPU": tp.CPU, "BOX_MEMORY": tp.Memory, "BOX_DISK": tp.Disk,
			"BOX_BOOTSTRAP_ROLE": tp.BootstrapRole} {
			if v != "" {
				b.WriteString(k + "=" + quoteEnv(v) + "\n")
			}
		}
		b.WriteString("BOX_REQUIRE_VM=" + strconv.FormatBool(tp.RequireVM) + "\n")
		b.WriteString("BOX_AUTOSTART=" + strconv.FormatBool(tp.Autostart) + "\n")
		again, err := ParseBoxEnv("fz/box.env", []byte(b.String()))
		if err != nil || !reflect.DeepEqual(tp, again) {
			t.Fatalf("round trip: %v\n%+v\n%+v\n%s", err, tp, again, b.String())
		}

		// A network key after an accepted file is refused on its own line.
		lines := strings.Count(string(data), "\n") + 1
		_, nerr = ParseBoxEnv("fz/box.env", append(append([]byte{}, data...), "\nBOX_BRIDGE=br0\n"...))
		if !errors.As(nerr, &ne) || ne.Line != lines+1 {
			t.Fatalf("BOX_BRIDGE after an accepted file: %v (want line %d)", nerr, lines+1)
		}
	})
}
