package profiles

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/heavy-duty/box/internal/strictoml"
)

// FuzzParse: Parse never panics and is deterministic; a profile it accepts is valid, uses
// only the closed sets, has its defaults applied, survives a re-encode unchanged, and
// still refuses an unknown key added to it. The seeds in testdata/fuzz/FuzzParse run
// with every plain `go test`.
func FuzzParse(f *testing.F) {
	f.Add([]byte("description = \"x\"\nbackend = \"bwrap\"\nnetwork = \"none\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fz", "fz.toml", data)
		p2, err2 := Parse("fz", "fz.toml", data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(p, p2) {
			t.Fatalf("not deterministic: (%v, %v) vs (%v, %v)", p, err, p2, err2)
		}
		if err != nil {
			if p != nil {
				t.Fatalf("error %v with a profile %+v", err, p)
			}
			if !strings.HasPrefix(err.Error(), "fz.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted profile fails Validate: %v\n%+v", err, p)
		}
		if ValidBackend(p.Backend) != nil || ValidNetwork(string(p.Network)) != nil || p.Template == "" {
			t.Fatalf("defaults or closed sets broken: %+v", p)
		}
		if p.Backend == BackendVM && p.Network == NetFull {
			t.Fatalf("vm with network full accepted")
		}
		for _, m := range p.Mounts {
			if m.Target == "" || (m.Mode != "ro" && m.Mode != "rw") {
				t.Fatalf("mount defaults not applied: %+v", m)
			}
		}
		if p.Name != "fz" || p.Source != "fz.toml" {
			t.Fatalf("name/source: %q %q", p.Name, p.Source)
		}

		// Re-encoding what was accepted and parsing it again gives the same profile.
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(p); err != nil {
			t.Fatalf("encode: %v", err)
		}
		q, err := Parse("fz", "fz.toml", buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded profile refused: %v\n%s", err, buf.String())
		}
		if !sameProfile(p, q) {
			t.Fatalf("round trip changed the profile:\n%+v\n%+v\n%s", p, q, buf.String())
		}

		// An unknown key is still refused, however valid the rest.
		_, err = Parse("fz", "fz.toml", append([]byte("zz_unknown_key = 1\n"), data...))
		var uk *strictoml.UnknownKeyError
		if !errors.As(err, &uk) || uk.Key != "zz_unknown_key" || uk.Line != 1 {
			t.Fatalf("unknown key not refused on line 1: %v", err)
		}
	})
}

// sameProfile compares profiles treating nil and empty slices alike.
func sameProfile(a, b *Profile) bool {
	norm := func(p Profile) Profile {
		if len(p.Env) == 0 {
			p.Env = nil
		}
		if len(p.Mounts) == 0 {
			p.Mounts = nil
		}
		if len(p.Tools) == 0 {
			p.Tools = nil
		}
		if len(p.Command) == 0 {
			p.Command = nil
		}
		return p
	}
	return reflect.DeepEqual(norm(*a), norm(*b))
}
