package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Yarn runs the file its rc names instead of itself on every command (berry's yarnPath
// in .yarnrc.yml, classic's yarn-path in .yarnrc) and loads the plugins .yarnrc.yml
// lists: the rc is protected, so what it names must be too, or the sandbox rewrites
// .yarn/releases/yarn-4.5.0.cjs and the host's next yarn runs it (hostile review,
// session 20: yarn 1.22.22's yarn --version ran the sandbox's rewrite, which read ~/.ssh).

// YarnLoads lists the files the yarn rc file name (".yarnrc.yml" or ".yarnrc") in dir
// has yarn run, made absolute against dir (yarn resolves them against the rc's
// directory), or the pnpmfile (or global pnpmfile) that pnpm's config
// ("pnpm-workspace.yaml" or ".npmrc") names, which pnpm requires on every command, pnpm --version among them (hostile review,
// session 21, pnpm 10.34.9), resolved against the config's directory too; and notes for each value box cannot resolve (an ${ENV} value, YAML's flow
// style). It reads the lines without a YAML library: the keys it looks for are
// top-level, and what it cannot read is said, never skipped. Pure.
func YarnLoads(rc []byte, name, dir string) (paths, notes []string) {
	text := strings.TrimPrefix(strings.ReplaceAll(string(rc), "\r\n", "\n"), "\ufeff")
	take := func(key, v string) {
		v = yarnValue(v)
		switch {
		case v == "":
		case strings.ContainsAny(v, "${}[]*?~"):
			notes = append(notes, key+" "+v)
		case filepath.IsAbs(v):
			paths = append(paths, filepath.Clean(v))
		default:
			paths = append(paths, filepath.Join(dir, v))
		}
	}
	if name == ".npmrc" {
		// pnpm reads its pnpmfile setting from .npmrc too: key = value, ; and # comments.
		for _, line := range strings.Split(text, "\n") {
			key, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if k := strings.TrimSpace(key); ok && (k == "pnpmfile" || k == "global-pnpmfile") {
				take(k, v)
			}
		}
		return paths, notes
	}
	if name == ".yarnrc" {
		// Classic's lockfile-like syntax: yarn-path "./x.js", quoted key or not.
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			key, v, _ := strings.Cut(line, " ")
			if strings.Trim(key, `"`) == "yarn-path" {
				take("yarn-path", v)
			}
		}
		return paths, notes
	}
	inPlugins, inConfigDeps := false, false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' && line[0] != '-' {
			inPlugins, inConfigDeps = false, false
			key, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch k := strings.Trim(strings.TrimSpace(key), `"'`); {
			case k == "yarnPath" && name == ".yarnrc.yml":
				take("yarnPath", v)
			case (k == "pnpmfile" || k == "globalPnpmfile") && name == "pnpm-workspace.yaml":
				if strings.TrimSpace(v) == "" {
					notes = append(notes, k+" (a list)") // block style: not read
				}
				take(k, v)
				continue
			case k == "configDependencies" && name == "pnpm-workspace.yaml":
				inConfigDeps = true
				if v = yarnValue(v); v != "" {
					notes = append(notes, "configDependencies "+v) // flow style: not read
				}
				continue
			case k != "plugins" || name != ".yarnrc.yml":
				continue
			default:
				inPlugins = true
				if v = strings.TrimSpace(v); v != "" && !strings.HasPrefix(v, "#") {
					notes = append(notes, "plugins "+v) // flow style: not read
				}
			}
			continue
		}
		if inConfigDeps {
			// pnpm requires the pnpmfile.cjs of each plugin config dependency from
			// node_modules/.pnpm-config (calcPnpmfilePathsOfPluginDeps, pnpm 10).
			if key, _, ok := strings.Cut(trimmed, ":"); ok {
				if dep := strings.Trim(strings.TrimSpace(key), `"'`); pnpmPluginName(dep) {
					paths = append(paths, filepath.Join(dir, "node_modules", ".pnpm-config", dep, "pnpmfile.cjs"))
				}
			}
			continue
		}
		if !inPlugins {
			continue
		}
		// - path: .yarn/plugins/x.cjs, its spec: on the next line, or - ./x.cjs.
		item := strings.TrimSpace(strings.TrimPrefix(trimmed, "-"))
		if key, v, ok := strings.Cut(item, ":"); ok && !strings.Contains(key, "/") {
			if strings.Trim(strings.TrimSpace(key), `"'`) == "path" {
				take("plugins path", v)
			}
			continue
		}
		if strings.HasPrefix(trimmed, "-") {
			take("plugins", item)
		}
	}
	return paths, notes
}

// pnpmPluginName is pnpm's isPluginName: a config dependency whose pnpmfile.cjs pnpm
// requires.
func pnpmPluginName(dep string) bool {
	if strings.HasPrefix(dep, "pnpm-plugin-") {
		return true
	}
	return strings.HasPrefix(dep, "@") && (strings.HasPrefix(dep, "@pnpm/plugin-") || strings.Contains(dep, "/pnpm-plugin-"))
}

// yarnValue is a YAML or .yarnrc scalar without its quotes and trailing comment.
func yarnValue(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
		if i := strings.IndexByte(v[1:], v[0]); i >= 0 {
			return v[1 : 1+i]
		}
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// maxYarnTotal is how much of the yarn rc files one launch reads (real ones are a few
// hundred bytes).
const maxYarnTotal = 1 << 20

// yarnSources lists the files in the working directory that the yarn rc files in dirs
// (every directory the walk found holding one: yarn reads them from the directory it runs
// in upward) name (YarnLoads). A value box cannot resolve, or an rc it cannot read, is a
// note. The rc files are the sandbox's to write when absent, so what they name is
// bounded like the .envrc files' loads, and one launch reads at most maxYarnTotal bytes
// of them (each is read up to 1 MiB and its lines walked, about 0.2 s a MiB: a tree of
// them cost every launch minutes; hostile review, session 21), the rest said.
func yarnSources(dirs []string, workdir string) (out, notes []string) {
	l := newLoads("yarn rc and pnpm config files", workdir) // loads.go
	unread, budget := 0, maxYarnTotal
	for _, dir := range dirs {
		for _, name := range []string{".yarnrc.yml", ".yarnrc", "pnpm-workspace.yaml", ".npmrc"} {
			rc := filepath.Join(dir, name)
			if budget <= 0 {
				if _, err := os.Lstat(rc); err == nil {
					unread++
				}
				continue
			}
			b, err := readConfig(rc)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				l.note(fmt.Sprintf("%s cannot be read (%v): what yarn or pnpm runs from it is not protected (protect_add it)", rc, err))
				continue
			}
			budget -= len(b)
			paths, unresolved := YarnLoads(b, name, dir)
			for _, u := range unresolved {
				l.note(fmt.Sprintf("%s names %q, which box cannot resolve: what yarn or pnpm runs from it is not protected (protect_add it)", rc, u))
			}
			for _, p := range paths {
				l.add(p)
			}
		}
	}
	out, notes = l.result()
	if unread > 0 {
		notes = append(notes, fmt.Sprintf("%d more yarn rc files past the %d bytes box reads of them are not read: what they have yarn run is not protected (an rc the sandbox wrote? remove what you did not write)", unread, maxYarnTotal))
	}
	return out, notes
}
