package postrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A snapshot written to disk leaves out its guards recorded absent and reads back as it
// was: the same Files (what the audit and a joining run's baseline compare with).
func TestSnapshotJSONRoundTrip(t *testing.T) {
	wd, in := aheadTree(t)
	s := Take(in)
	b, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(wd, ".vscode", "tasks.json")
	if f, ok := s.Files[absent]; !ok || f.Kind != "" {
		t.Fatalf("%s not recorded absent: %+v", absent, f)
	}
	if bytes.Contains(b, []byte(`"`+absent+`":`)) || !bytes.Contains(b, []byte(`"guards_absent":true`)) {
		t.Errorf("the absent guard is written in files:\n%s", b)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Files) != len(s.Files) {
		t.Errorf("%d files read back, %d taken", len(back.Files), len(s.Files))
	}
	for p, f := range s.Files {
		f.content = nil // kept in memory only
		if g := back.Files[p]; !reflect.DeepEqual(g, f) {
			t.Errorf("%s: read back %+v, taken %+v", p, g, f)
		}
	}
	// A guard whose path has no entry (its directory resolved elsewhere): the full form,
	// so reading back adds nothing.
	delete(s.Files, absent)
	b, _ = s.JSON()
	if bytes.Contains(b, []byte(`"guards_absent"`)) {
		t.Error("compact form written though a guard has no entry")
	}
	back = Snapshot{}
	json.Unmarshal(b, &back)
	if _, ok := back.Files[absent]; ok {
		t.Error("an entry read back that was not taken")
	}
}

// Guards are written with each text once and paths under the working directory
// relative to it, and read back exactly; an older file's list of guards still reads; a
// written form that does not add up is refused.
func TestSnapshotJSONGuards(t *testing.T) {
	wd := "/w/proj"
	long := strings.Repeat("lefthook runs its commands ", 4)
	guards := []Guard{
		{Path: wd + "/a/lefthook.yml", Runs: long},
		{Path: wd + "/b/lefthook.yml", Runs: long},
		{Path: "/w/proj-other/.envrc", Runs: "direnv"}, // outside, though it shares the prefix
		{Path: "/elsewhere/.git/hooks", Runs: long},
		{Path: wd + "/", Runs: "direnv"},
	}
	s := Snapshot{Workdir: wd, Guards: guards, Repos: map[string]*Repo{}, Files: map[string]File{}}
	b, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), long); n != 1 {
		t.Errorf("the shared text written %d times:\n%s", n, b)
	}
	if strings.Contains(string(b), `"`+wd+`/a/lefthook.yml"`) {
		t.Errorf("a path under the working directory written whole:\n%s", b)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Guards, guards) {
		t.Errorf("read back %q, written %q", back.Guards, guards)
	}
	old := []byte(`{"workdir":"/w/proj","guards":[{"path":"/w/proj/.envrc","runs":"direnv"}],"repos":{},"files":{}}`)
	back = Snapshot{}
	if err := json.Unmarshal(old, &back); err != nil || !reflect.DeepEqual(back.Guards, []Guard{{Path: "/w/proj/.envrc", Runs: "direnv"}}) {
		t.Errorf("the list form: %v %q", err, back.Guards)
	}
	for _, bad := range []string{
		`{"workdir":"/w","guards":{"texts":["x"],"runs":[1],"paths":["a"]}}`,
		`{"workdir":"/w","guards":{"texts":["x"],"runs":[0,0],"paths":["a"]}}`,
		`{"workdir":"/w","guards":{"texts":["x"],"runs":[-1],"paths":["a"]}}`,
		`{"workdir":"","guards":{"texts":["x"],"runs":[0],"paths":["a"]}}`,
	} {
		if err := json.Unmarshal([]byte(bad), &Snapshot{}); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// onlyRuns looks at every field of File: an entry it leaves out must read back whole.
// A field added to File without onlyRuns knowing fails here.
func TestSnapshotJSONFields(t *testing.T) {
	ft := reflect.TypeOf(File{})
	for i := range ft.NumField() {
		f := File{Runs: "r"}
		v := reflect.ValueOf(&f).Elem().Field(i)
		if ft.Field(i).Name == "Runs" {
			continue
		}
		switch v.Kind() {
		case reflect.String:
			reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().SetString("x")
		case reflect.Bool:
			reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().SetBool(true)
		case reflect.Int64, reflect.Int:
			v.SetInt(1)
		case reflect.Uint32, reflect.Uint64:
			v.SetUint(1)
		case reflect.Slice:
			reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			t.Fatalf("File.%s: a %s this test cannot set", ft.Field(i).Name, v.Kind())
		}
		if f.onlyRuns("r") {
			t.Errorf("File.%s set, yet onlyRuns says the entry is only its guard's text", ft.Field(i).Name)
		}
	}
}

// aheadTree is a working directory with repositories of every kind the walk finds (a
// .git directory, a .git file, a bare-looking directory, one with a commondir) among
// some hundreds of plain directories, and protected paths present and absent.
func aheadTree(t *testing.T) (string, Input) {
	wd := t.TempDir()
	mk := func(p, content string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		for j := range 10 {
			os.MkdirAll(filepath.Join(wd, "deps", fmt.Sprintf("d%d", i), fmt.Sprintf("e%d", j)), 0o755)
		}
	}
	mk(filepath.Join(wd, ".git", "config"), "[core]\n\tfsmonitor = ./run-me\n")
	mk(filepath.Join(wd, ".git", "HEAD"), "ref: refs/heads/main\n")
	mk(filepath.Join(wd, "deps", "d3", "e1", ".git", "config"), "[core]\n\thooksPath = .hooks\n")
	mk(filepath.Join(wd, "deps", "d3", "e1", ".hooks", "pre-commit"), "#!/bin/sh\n")
	mk(filepath.Join(wd, "deps", "d4", ".git"), "gitdir: ../../.git/modules/d4\n")
	mk(filepath.Join(wd, ".git", "modules", "d4", "HEAD"), "ref: refs/heads/main\n")
	mk(filepath.Join(wd, ".git", "modules", "d4", "config"), "[diff \"x\"]\n\texternal = sh -c id\n")
	for _, d := range []string{"objects", "refs"} {
		os.MkdirAll(filepath.Join(wd, "deps", "d5", "bare", d), 0o755)
	}
	mk(filepath.Join(wd, "deps", "d5", "bare", "HEAD"), "ref: refs/heads/main\n")
	mk(filepath.Join(wd, "deps", "d6", "wt", "HEAD"), "ref: refs/heads/main\n")
	mk(filepath.Join(wd, "deps", "d6", "wt", "commondir"), "../../../.git\n")
	mk(filepath.Join(wd, ".envrc"), "export A=1\n")
	in := Input{Workdir: wd, Protected: []Guard{
		{Path: filepath.Join(wd, ".envrc"), Runs: "direnv"},
		{Path: filepath.Join(wd, ".vscode", "tasks.json"), Runs: "vscode"},
		{Path: filepath.Join(wd, "deps", "d3", "e1", ".envrc"), Runs: "direnv"},
	}}
	return wd, in
}

// The project files recorded absent at work trees' tops (Input.TopGuards) are written
// once per work tree as indexes, not each with its text, and read back exactly, their
// Top included, also where a guard has the same path; an index out of range is refused.
func TestSnapshotJSONTopsAbsent(t *testing.T) {
	wd, in := aheadTree(t)
	long := strings.Repeat("rustup runs the toolchain it names ", 3)
	in.TopGuards = []Guard{{Path: ".envrc", Runs: "direnv"}, {Path: ".vscode/tasks.json", Runs: "vscode"}, {Path: "rust-toolchain.toml", Runs: long}}
	s := Take(in)
	absent := filepath.Join(wd, "deps", "d3", "e1", "rust-toolchain.toml")
	if f, ok := s.Files[absent]; !ok || f.Kind != "" || f.Top == "" {
		t.Fatalf("%s not recorded absent at a top: %+v", absent, f)
	}
	b, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"`+absent+`":`)) || !bytes.Contains(b, []byte(`"tops_absent":`)) {
		t.Errorf("the absent top guard is written in files:\n%s", b)
	}
	if n := strings.Count(string(b), long); n != 1 {
		t.Errorf("the top guard's text written %d times, want once (in top_guards)", n)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Files) != len(s.Files) {
		t.Errorf("%d files read back, %d taken", len(back.Files), len(s.Files))
	}
	for p, f := range s.Files {
		f.content = nil
		if g := back.Files[p]; !reflect.DeepEqual(g, f) {
			t.Errorf("%s: read back %+v, taken %+v", p, g, f)
		}
	}
	bad := bytes.Replace(b, []byte(`"tops_absent":{`), []byte(`"tops_absent":{"/x/.git":[7],`), 1)
	if err := json.Unmarshal(bad, &Snapshot{}); err == nil {
		t.Error("an index past top_guards accepted")
	}
}
