package profiles

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/heavy-duty/box/internal/strictoml"
)

//go:embed builtin/*.toml
var builtin embed.FS

// Default is the profile used when none is named.
const Default = "default"

// ErrNotFound is returned (wrapped) for a profile that exists nowhere.
var ErrNotFound = errors.New("no such profile")

// Dir is where user profiles live: $XDG_CONFIG_HOME/box/profiles.
func Dir(configHome string) string { return filepath.Join(configHome, "box", "profiles") }

// Parse decodes one profile strictly and validates it.
func Parse(name, source string, data []byte) (*Profile, error) {
	p := &Profile{}
	if err := strictoml.Decode(source, data, p); err != nil {
		return nil, err
	}
	p.applyDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	p.Name = name
	if source == "built-in profile "+name {
		p.Source = "built-in"
	} else {
		p.Source = source
	}
	return p, nil
}

// Load finds profile name: the user's file replaces a built-in of the same name.
func Load(name, userDir string) (*Profile, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if userDir != "" {
		file := filepath.Join(userDir, name+".toml")
		data, err := os.ReadFile(file)
		if err == nil {
			return Parse(name, file, data)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	data, err := fs.ReadFile(builtin, "builtin/"+name+".toml")
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", name, ErrNotFound)
	}
	return Parse(name, "built-in profile "+name, data)
}

// List returns every profile (user ones replacing built-ins), sorted by name.
func List(userDir string) ([]*Profile, error) {
	names := map[string]bool{}
	ents, _ := fs.ReadDir(builtin, "builtin")
	for _, e := range ents {
		names[strings.TrimSuffix(e.Name(), ".toml")] = true
	}
	if userDir != "" {
		ents, err := os.ReadDir(userDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && !e.IsDir() && !strings.HasPrefix(n, ".") {
				names[n] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []*Profile
	for _, n := range sorted {
		p, err := Load(n, userDir)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Builtin reports whether name is a shipped profile.
func Builtin(name string) bool {
	_, err := fs.Stat(builtin, "builtin/"+name+".toml")
	return err == nil
}
