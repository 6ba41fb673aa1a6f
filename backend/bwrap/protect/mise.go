package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// mise's trust covers a config file's own content, not the files its [env] has mise load:
// a trusted mise.toml's _.source = "./scripts/env.sh" ran the sandbox's rewrite of
// env.sh, and its _.file = ".env.mise" exported the sandbox's LD_PRELOAD, at the host's
// next prompt under mise activate (mise hook-env), without a question (hostile review,
// session 20, mise 2026.9.15).

// miseFile is a mise config file the walk found, and its config root (the directory
// mise resolves the file's relative paths against: the project's, also for
// .config/mise.toml, mise/config.toml and .config/mise/conf.d/*.toml).
type miseFile struct{ path, root string }

// miseConfigAt says whether name, in the directory dir the walk lists, is a file mise
// reads as configuration, and its config root.
func miseConfigAt(dir, name string) (root string, ok bool) {
	if !strings.HasSuffix(name, ".toml") {
		return "", false
	}
	base, parent := filepath.Base(dir), filepath.Dir(dir)
	switch {
	case strings.HasPrefix(name, "mise.") || strings.HasPrefix(name, ".mise."):
		// mise.toml, .mise.toml, mise.local.toml, mise.ENV.toml, ...
		if base == ".config" {
			return parent, true
		}
		return dir, true
	case (name == "config.toml" || name == "config.local.toml" || strings.HasPrefix(name, "config.")) && (base == "mise" || base == ".mise"):
		if base == "mise" && filepath.Base(parent) == ".config" {
			return filepath.Dir(parent), true
		}
		return parent, true
	case base == "conf.d" && filepath.Base(parent) == "mise" && filepath.Base(filepath.Dir(parent)) == ".config":
		return filepath.Dir(filepath.Dir(parent)), true
	}
	return "", false
}

// MiseLoads lists the files a mise config (conf, in fileDir, its config root root) has
// mise source or read into the environment ([env]'s _.source and _.file, the older
// env_file and dotenv), made absolute as mise does (against the config root;
// against the file's own directory too, when that differs: over-approximating is the
// safe side), and notes for each it cannot resolve (a template other than
// {{config_root}}, a variable) or a file it cannot parse. Pure.
func MiseLoads(conf []byte, fileDir, root string) (paths, notes []string) {
	if why := tooComplex(conf); why != "" {
		return nil, []string{"not read (" + why + ")"}
	}
	var m map[string]any
	if _, err := toml.Decode(string(conf), &m); err != nil {
		return nil, []string{fmt.Sprintf("cannot be parsed (%v)", err)}
	}
	take := func(key string, v any) {
		var vals []string
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				vals = append(vals, v)
			case []any:
				for _, x := range v {
					walk(x)
				}
			case []map[string]any:
				for _, x := range v {
					walk(x)
				}
			case map[string]any:
				// { path = "x", redact = true }, or a list of them.
				if p, ok := v["path"]; ok {
					walk(p)
				}
			}
		}
		walk(v)
		for _, s := range vals {
			s = strings.NewReplacer("{{config_root}}", root, "{{ config_root }}", root).Replace(s)
			switch {
			case s == "":
			case strings.ContainsAny(s, "${}*?[~"):
				notes = append(notes, key+" "+s)
			case filepath.IsAbs(s):
				paths = append(paths, filepath.Clean(s))
			default:
				paths = append(paths, filepath.Join(root, s))
				if fileDir != root {
					paths = append(paths, filepath.Join(fileDir, s))
				}
			}
		}
	}
	for _, k := range []string{"env_file", "dotenv"} {
		if v, ok := m[k]; ok {
			take(k, v)
		}
	}
	var envs []map[string]any
	switch e := m["env"].(type) {
	case map[string]any:
		envs = append(envs, e)
	case []map[string]any:
		envs = append(envs, e...)
	case []any:
		for _, x := range e {
			if t, ok := x.(map[string]any); ok {
				envs = append(envs, t)
			}
		}
	}
	for _, env := range envs {
		d, ok := env["_"].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"source", "file"} {
			if v, ok := d[k]; ok {
				take("_."+k, v)
			}
		}
	}
	return paths, notes
}

// The TOML decoder's cost grows past linear with nesting: 100,000 nested inline tables
// (200 KB) ran for minutes and was killed, and the sandbox can write a mise config the
// audit does not watch (mise.ENV.toml), which every later launch would decode. So a
// config past these bounds is not decoded but said; mise configs are small and flat.
const (
	maxMiseConfig = 256 << 10
	maxMiseDepth  = 32
	maxMiseTotal  = 1 << 20 // all of a launch's mise configs together
)

// tooComplex says why conf is not to be decoded: larger than maxMiseConfig, or brackets
// and braces nested deeper than maxMiseDepth (counted without regard to strings, so a
// bracket inside a string counts too: a false "too deep" is said, never skipped).
func tooComplex(conf []byte) string {
	if len(conf) > maxMiseConfig {
		return fmt.Sprintf("larger than %d bytes", maxMiseConfig)
	}
	depth := 0
	for _, c := range conf {
		switch c {
		case '[', '{':
			if depth++; depth > maxMiseDepth {
				return fmt.Sprintf("nested deeper than %d", maxMiseDepth)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return ""
}

// miseSources lists the files in the working directory that the mise configs files
// name for mise to source or load (MiseLoads); what it cannot read or resolve is a note.
// The configs are the sandbox's to write when absent, so what they name is bounded like
// the .envrc files' loads.
func miseSources(files []miseFile, workdir string) (out, notes []string) {
	l := newLoads("mise configs", workdir) // loads.go
	unread, budget := 0, maxMiseTotal
	for _, f := range files {
		if budget <= 0 {
			unread++
			continue
		}
		b, err := readConfig(f.path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			l.note(fmt.Sprintf("%s cannot be read (%v): what mise loads from it is not protected (protect_add it)", f.path, err))
			continue
		}
		budget -= len(b)
		paths, unresolved := MiseLoads(b, filepath.Dir(f.path), f.root)
		for _, u := range unresolved {
			l.note(fmt.Sprintf("%s: %s, which box cannot resolve: what mise loads from it is not protected (protect_add it)", f.path, u))
		}
		for _, p := range paths {
			if p != f.path { // the config itself is mise's entry's
				l.add(p)
			}
		}
	}
	out, notes = l.result()
	if unread > 0 {
		notes = append(notes, fmt.Sprintf("%d more mise configs past the %d bytes box reads of them are not read: what they load is not protected (a config the sandbox wrote? remove what you did not write)", unread, maxMiseTotal))
	}
	return out, notes
}
