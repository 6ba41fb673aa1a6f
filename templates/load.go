package templates

import (
	"embed"
	"errors"
	"fmt"
	"github.com/heavy-duty/box/internal/catalog"
	"io/fs"
	"os"
	"path/filepath"
)

// The shipped templates. Adding one means adding its directory here.
//
//go:embed all:blank all:claude all:codex all:grok all:kimi
var builtin embed.FS

// Files a template directory may hold. Other files (a README, say) are ignored.
const (
	ManifestTOML = "template.toml"
	ManifestEnv  = "box.env"
	UserDataFile = "user-data.yaml"
	NotesFile    = "sandbox.md"
)

// ErrNotFound is returned (wrapped) for a template that exists nowhere.
var ErrNotFound = errors.New("no such template")

// Dir is where user templates live: $XDG_CONFIG_HOME/box/templates.
func Dir(configHome string) string { return filepath.Join(configHome, "box", "templates") }

// Load finds the template name, preferring the user's directory over the built-ins.
func Load(name, userDir string) (*Template, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if userDir != "" {
		dir := filepath.Join(userDir, name)
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return loadFS(os.DirFS(dir), name, dir)
		}
	}
	if _, err := fs.Stat(builtin, name); err == nil {
		return loadFS(mustSub(name), name, "built-in")
	}
	return nil, fmt.Errorf("template %q: %w", name, ErrNotFound)
}

// List returns every template, user ones replacing built-ins of the same name, sorted.
// A broken user template is returned as an error, not skipped.
func List(userDir string) ([]*Template, error) {
	names := map[string]bool{}
	entries, _ := fs.ReadDir(builtin, ".")
	for _, e := range entries {
		names[e.Name()] = true
	}
	err := catalog.Names(names, userDir, func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name()
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	return catalog.LoadAll(names, func(n string) (*Template, error) { return Load(n, userDir) })
}

func mustSub(name string) fs.FS {
	sub, err := fs.Sub(builtin, name)
	if err != nil {
		panic(err)
	}
	return sub
}

func loadFS(fsys fs.FS, name, source string) (*Template, error) {
	where := func(f string) string {
		if source == "built-in" {
			return "built-in template " + name + "/" + f
		}
		return filepath.Join(source, f)
	}
	toml, errT := fs.ReadFile(fsys, ManifestTOML)
	env, errE := fs.ReadFile(fsys, ManifestEnv)
	var t *Template
	var err error
	file := where(ManifestTOML)
	switch {
	case errT == nil && errE == nil:
		return nil, fmt.Errorf("template %q has both %s and %s: keep one", name, ManifestTOML, ManifestEnv)
	case errT == nil:
		t, err = ParseManifest(file, toml)
	case errE == nil:
		file = where(ManifestEnv)
		t, err = ParseBoxEnv(file, env)
	default:
		return nil, fmt.Errorf("template %q in %s has no %s or %s", name, source, ManifestTOML, ManifestEnv)
	}
	if err != nil {
		return nil, err
	}
	if b, err := fs.ReadFile(fsys, UserDataFile); err == nil {
		t.UserData = string(b)
	}
	if b, err := fs.ReadFile(fsys, NotesFile); err == nil {
		t.Notes = string(b)
	}
	t.Name, t.Source, t.File = name, source, file
	return t, nil
}
