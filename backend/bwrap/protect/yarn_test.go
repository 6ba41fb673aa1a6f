package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestYarnLoads(t *testing.T) {
	yml := "\ufeff# berry\r\nyarnPath: .yarn/releases/yarn-4.5.0.cjs # pinned\r\n" +
		"nodeLinker: node-modules\n" +
		"plugins:\n" +
		"  - path: .yarn/plugins/@yarnpkg/plugin-a.cjs\n" +
		"    spec: \"@yarnpkg/plugin-a\"\n" +
		"  - './tools/plugin-b.cjs'\n" +
		"  -\n" +
		"    path: \"/abs/plugin-c.cjs\"\n" +
		"npmScopes:\n" +
		"  x:\n" +
		"    path: not-a-plugin\n"
	paths, notes := YarnLoads([]byte(yml), ".yarnrc.yml", "/w/p")
	want := []string{"/w/p/.yarn/releases/yarn-4.5.0.cjs", "/w/p/.yarn/plugins/@yarnpkg/plugin-a.cjs", "/w/p/tools/plugin-b.cjs", "/abs/plugin-c.cjs"}
	if !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf("paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	// What box cannot resolve is said.
	_, notes = YarnLoads([]byte("yarnPath: ${YARN_BIN}/yarn.cjs\nplugins: [{path: x.cjs}]\n"), ".yarnrc.yml", "/w/p")
	if len(notes) != 2 {
		t.Errorf("notes %q, want the ${} value and the flow-style plugins", notes)
	}
	paths, _ = YarnLoads([]byte("# classic\nregistry \"https://r\"\nyarn-path \"./.yarn/releases/yarn-1.22.22.js\"\n\"yarn-path\" ../shared/yarn.js\n"), ".yarnrc", "/w/p")
	if want := []string{"/w/p/.yarn/releases/yarn-1.22.22.js", "/w/shared/yarn.js"}; !slices.Equal(paths, want) {
		t.Errorf("classic paths\n got %q\nwant %q", paths, want)
	}
}

// What a yarn rc names in the working directory is protected: read-only when present,
// for the audit to check when absent (hostile review, session 20: the sandbox rewrote
// the release yarnPath named, and the host's next yarn ran it); what lies outside is
// not the sandbox's to write.
func TestScanYarnSources(t *testing.T) {
	wd := realTemp(t)
	os.MkdirAll(filepath.Join(wd, ".yarn", "releases"), 0o755)
	os.WriteFile(filepath.Join(wd, ".yarnrc.yml"), []byte("yarnPath: .yarn/releases/yarn-4.5.0.cjs\nplugins:\n  - path: .yarn/plugins/p.cjs\n"), 0o644)
	os.WriteFile(filepath.Join(wd, ".yarn", "releases", "yarn-4.5.0.cjs"), []byte("//\n"), 0o644)
	os.MkdirAll(filepath.Join(wd, "pkg"), 0o755)
	os.WriteFile(filepath.Join(wd, "pkg", ".yarnrc"), []byte("yarn-path \"../../outside/yarn.js\"\nyarn-path tools/y.js\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "pkg", ".yarnrc.yml"), []byte("yarnPath: \"$HOME/y.cjs\"\n"), 0o644)
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	want := []string{filepath.Join(wd, ".yarn", "releases", "yarn-4.5.0.cjs"), filepath.Join(wd, ".yarn", "plugins", "p.cjs"), filepath.Join(wd, "pkg", "tools", "y.js")}
	if !slices.Equal(tree.YarnSources, want) {
		t.Fatalf("yarn sources\n got %q\nwant %q", tree.YarnSources, want)
	}
	said := false
	for _, n := range tree.Notes {
		said = said || strings.Contains(n, "$HOME/y.cjs")
	}
	if !said {
		t.Errorf("the unresolvable yarnPath is not said: %q", tree.Notes)
	}
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ro := s.ReadOnly(); !slices.Contains(ro, want[0]) {
		t.Errorf("the release yarnPath names (present) is not read-only: %q", ro)
	}
	audited := map[string]bool{}
	for _, p := range s.Protected {
		if p.Entry == "yarn:path" && p.Absent {
			audited[p.Path] = true
		}
	}
	if !audited[want[1]] || !audited[want[2]] {
		t.Errorf("absent yarn files are not for the audit to check: %+v", s.Protected)
	}
}

// pnpm requires the file pnpm-workspace.yaml's or .npmrc's pnpmfile setting names on
// every command, pnpm --version among them, resolved against the config's directory
// (hostile review, session 21, pnpm 10.34.9: tools/hook.cjs ran from either).
func TestPnpmLoads(t *testing.T) {
	paths, notes := YarnLoads([]byte("packages:\n  - pkg\n  - 'pnpmfile: no'\npnpmfile: tools/hook.cjs # ours\nscriptShell: /bin/sh\n"), "pnpm-workspace.yaml", "/w/p")
	if want := []string{"/w/p/tools/hook.cjs"}; !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf("pnpm-workspace.yaml paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	paths, notes = YarnLoads([]byte("registry=https://r/\npnpmfile = ../shared/hook.cjs\n; pnpmfile=commented.cjs\n"), ".npmrc", "/w/p")
	if want := []string{"/w/shared/hook.cjs"}; !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf(".npmrc paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	if _, notes = YarnLoads([]byte("pnpmfile=${HOME}/x.cjs\n"), ".npmrc", "/w/p"); len(notes) != 1 {
		t.Errorf("notes %q, want the ${} value", notes)
	}
}

func TestScanPnpmfile(t *testing.T) {
	wd := realTemp(t)
	os.WriteFile(filepath.Join(wd, "pnpm-workspace.yaml"), []byte("pnpmfile: tools/hook.cjs\n"), 0o644)
	os.MkdirAll(filepath.Join(wd, "pkg"), 0o755)
	os.WriteFile(filepath.Join(wd, "pkg", ".npmrc"), []byte("pnpmfile=hooks/p.cjs\n"), 0o644)
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	want := []string{filepath.Join(wd, "tools", "hook.cjs"), filepath.Join(wd, "pkg", "hooks", "p.cjs")}
	if !slices.Equal(tree.YarnSources, want) {
		t.Fatalf("pnpmfile sources\n got %q\nwant %q", tree.YarnSources, want)
	}
}

// pnpm's global pnpmfile setting, set in the project's config, is required on every
// command too (hostile review, session 21, pnpm 10.34.9: global-pnpmfile in .npmrc and
// globalPnpmfile in pnpm-workspace.yaml each had pnpm --version run tools/g.cjs).
func TestPnpmLoadsGlobal(t *testing.T) {
	paths, notes := YarnLoads([]byte("globalPnpmfile: tools/g.cjs\n"), "pnpm-workspace.yaml", "/w/p")
	if want := []string{"/w/p/tools/g.cjs"}; !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf("pnpm-workspace.yaml paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	paths, notes = YarnLoads([]byte("global-pnpmfile=tools/g.cjs\n"), ".npmrc", "/w/p")
	if want := []string{"/w/p/tools/g.cjs"}; !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf(".npmrc paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
}

// pnpm requires the pnpmfile.cjs of each config dependency named as a plugin
// (pnpm-plugin-*, @pnpm/plugin-*, @scope/pnpm-plugin-*) from node_modules/.pnpm-config on
// every command (hostile review, session 21, pnpm 10.34.9: pnpm --version, with no
// network, ran node_modules/.pnpm-config/pnpm-plugin-foo/pnpmfile.cjs, which the sandbox
// can write).
func TestPnpmLoadsConfigDependencies(t *testing.T) {
	yml := "packages:\n  - pkg\nconfigDependencies:\n  pnpm-plugin-foo: \"1.0.0+sha512-AA\"\n  '@pnpm/plugin-bar': 2.0.0+sha512-BB\n  \"@acme/pnpm-plugin-baz\": 3.0.0+sha512-CC\n  not-a-plugin: 1.0.0+sha512-DD\n  '@acme/other': 1.0.0\nonlyBuiltDependencies:\n  - pnpm-plugin-nope\n"
	paths, notes := YarnLoads([]byte(yml), "pnpm-workspace.yaml", "/w/p")
	want := []string{"/w/p/node_modules/.pnpm-config/pnpm-plugin-foo/pnpmfile.cjs", "/w/p/node_modules/.pnpm-config/@pnpm/plugin-bar/pnpmfile.cjs", "/w/p/node_modules/.pnpm-config/@acme/pnpm-plugin-baz/pnpmfile.cjs"}
	if !slices.Equal(paths, want) || len(notes) != 0 {
		t.Errorf("paths\n got %q\nwant %q\nnotes %q", paths, want, notes)
	}
	if _, notes = YarnLoads([]byte("configDependencies: {pnpm-plugin-x: 1.0.0}\n"), "pnpm-workspace.yaml", "/w/p"); len(notes) != 1 {
		t.Errorf("notes %q, want the flow-style configDependencies", notes)
	}
}

// The yarn rc files are the tree's to write, in every directory: each is read up to
// 1 MiB and its lines walked (about 0.2 s a MiB of plugin lines), so a tree of them cost
// every launch minutes (hostile review of session 20's yarn:path, session 21). One
// launch reads at most maxYarnTotal bytes of them; the rest is said.
func TestScanYarnSourcesBudget(t *testing.T) {
	wd := realTemp(t)
	big := "plugins:\n" + strings.Repeat("- a\n", (256<<10)/4)
	for i := 0; i < 8; i++ {
		d := filepath.Join(wd, fmt.Sprint("d", i))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, ".yarnrc.yml"), []byte(big), 0o644)
	}
	tree := Scan(wd, t.TempDir(), Options{}, nil)
	if !strings.Contains(strings.Join(tree.Notes, "\n"), "more yarn rc files past") {
		t.Errorf("the rc files past the budget are not said: %q", tree.Notes)
	}
}
