package profiles

import (
	"embed"
	"errors"
	"fmt"
	"github.com/heavy-duty/box/internal/catalog"
	"io/fs"
	"os"
	"path/filepath"
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
		if len(p.Syscalls) > 0 {
			// Turning the filter off is the operator's own decision, never a default.
			return nil, fmt.Errorf("%s: syscalls: a built-in profile may not turn syscall groups off", source)
		}
		p.Source = "built-in"
		if p.SSH != nil {
			// Which keys sign for which hosts is the operator's own decision.
			return nil, fmt.Errorf("%s: ssh: a built-in profile may not reach the host's ssh-agent", source)
		}
		// Loosening is the operator's own, explicit choice: never a shipped default.
		if p.DevShell != "" {
			// Its flake is evaluated on the host, as the operator: the operator's choice.
			return nil, fmt.Errorf("%s: devshell: only a profile of your own may name a dev shell", source)
		}
		if len(p.ProtectDrop) > 0 {
			return nil, fmt.Errorf("%s: protect_drop: a built-in profile cannot loosen the protected set", source)
		}
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
	err := catalog.Names(names, userDir, func(e fs.DirEntry) string {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && !e.IsDir() {
			return n
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	return catalog.LoadAll(names, func(n string) (*Profile, error) { return Load(n, userDir) })
}

// Builtin reports whether name is a shipped profile.
func Builtin(name string) bool {
	_, err := fs.Stat(builtin, "builtin/"+name+".toml")
	return err == nil
}
