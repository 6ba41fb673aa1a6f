package postrun

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// kv renders entries as "name=value" ("name" for a bare boolean), one per element.
func kv(es []Entry) []string {
	out := []string{}
	for _, e := range es {
		if e.HasValue {
			out = append(out, e.Name+"="+e.Value)
		} else {
			out = append(out, e.Name)
		}
	}
	return out
}

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
		bad      bool
	}{
		{"plain", "[core]\n\tfsmonitor = id >/tmp/m\n", []string{"core.fsmonitor=id >/tmp/m"}, false},
		{"case-insensitive section and key", "[CoRe]\n\tFsMonitor = x\n", []string{"core.fsmonitor=x"}, false},
		{"subsection keeps case", "[diff \"JPG\"]\n\ttextconv = exif\n", []string{"diff.JPG.textconv=exif"}, false},
		{"legacy dotted subsection lowercased", "[diff.JPG]\n\ttextconv = exif\n", []string{"diff.jpg.textconv=exif"}, false},
		{"dotted section with subsection", "[a.b \"C\"]\nk=v\n", []string{"a.b.C.k=v"}, false},
		{"subsection escapes", "[alias \"x\\\"y\\\\z\\q\"]\nk=v\n", []string{`alias.x"y\zq.k=v`}, false},
		{"tab before subsection", "[a\t\"b\"]\nk=v\n", []string{"a.b.k=v"}, false},
		{"space before ] refused", "[a \"b\" ]\nk=v\n", nil, true},
		{"unterminated subsection", "[a \"b\nk=v\n", nil, true},
		{"bare boolean", "[core]\n\tfsmonitor\n", []string{"core.fsmonitor"}, false},
		{"bare boolean at EOF", "[core]\nfsmonitor", []string{"core.fsmonitor"}, false},
		{"empty value", "[core]\npager =\n", []string{"core.pager="}, false},
		{"key on the header line", "[core]fsmonitor=x [y] z\n", []string{"core.fsmonitor=x [y] z"}, false},
		{"several keys after one header", "[core] a=1\n b=2\n[x \"y\"] c\n", []string{"core.a=1", "core.b=2", "x.y.c"}, false},
		{"comments", "# c\n; c\n[core] ; c\n\tpager = less # not this\n\teditor = \"vi # this\" ; c\n", []string{"core.pager=less", "core.editor=vi # this"}, false},
		{"quoted parts join", "[a]\nk = \"x\"y\" z\"\n", []string{"a.k=xy z"}, false},
		{"inner whitespace kept, ends trimmed", "[a]\nk =  x \t y  \n", []string{"a.k=x   y"}, false},
		{"escapes", "[a]\nk = a\\tb\\nc\\bd\\\\e\\\"f\n", []string{"a.k=a\tb\nc\bd\\e\"f"}, false},
		{"unknown escape refused", "[a]\nk = a\\x\n", nil, true},
		{"continuation", "[alias]\n\tx = !sh -c \\\n   'id'\n", []string{"alias.x=!sh -c    'id'"}, false},
		{"continuation inside quotes", "[a]\nk = \"x\\\ny\"\n", []string{"a.k=xy"}, false},
		{"newline inside quotes refused", "[a]\nk = \"x\ny\"\n", nil, true},
		{"comment swallows a trailing backslash", "[a]\nk=v ; c\\\nj=1\n", []string{"a.k=v", "a.j=1"}, false},
		{"CRLF", "[a]\r\nk = v\r\n", []string{"a.k=v"}, false},
		{"lone CR in a key refused", "[a]\nk\r=v\n", nil, true},
		{"BOM", "\xef\xbb\xbf[a]\nk=v\n", []string{"a.k=v"}, false},
		{"partial BOM refused", "\xef\xbb[a]\nk=v\n", nil, true},
		{"key must start with a letter", "[a]\n2k=v\n", nil, true},
		{"dash in names", "[c-1]\nk-2=v\n", []string{"c-1.k-2=v"}, false},
		{"key then comment refused", "[a]\nk # c\n", nil, true},
		{"key outside any section", "k=v\n", []string{"k=v"}, false},
		{"NUL ends the value", "[a]\nk=x\x00y\n", []string{"a.k=x"}, false},
		{"include", "[include]\n\tpath = ../x.cfg\n", []string{"include.path=../x.cfg"}, false},
		{"includeIf gitdir", "[includeIf \"gitdir:~/work/\"]\n\tpath = w.cfg\n", []string{"includeif.gitdir:~/work/.path=w.cfg"}, false},
		{"entries before a bad line", "[a]\nk=v\n[b\nj=1\n", []string{"a.k=v"}, true},
		{"empty header refused", "[]\nk=v\n", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(c.in))
			var pe *ParseError
			if c.bad != (err != nil) || err != nil && !errors.As(err, &pe) {
				t.Fatalf("err = %v, want bad=%v", err, c.bad)
			}
			if c.want == nil {
				c.want = []string{}
			}
			if g := kv(got); strings.Join(g, "|") != strings.Join(c.want, "|") {
				t.Errorf("got %q, want %q", g, c.want)
			}
			if !c.bad {
				checkGit(t, []byte(c.in), got)
			}
		})
	}
}

func TestEntryParts(t *testing.T) {
	for name, want := range map[string][3]string{
		"core.pager":                 {"core", "", "pager"},
		"diff.JPG.textconv":          {"diff", "JPG", "textconv"},
		"includeif.gitdir:a.b/.path": {"includeif", "gitdir:a.b/", "path"},
		"k":                          {"", "", "k"},
	} {
		s, sub, k := Entry{Name: name}.Parts()
		if [3]string{s, sub, k} != want {
			t.Errorf("%s: %q %q %q, want %q", name, s, sub, k, want)
		}
	}
}

func TestRemoveSpans(t *testing.T) {
	in := "[core]\n\tbare = false\n\tfsmonitor = \"id \\\n >/tmp/m\" ; planted\n\tpager = less\n[alias] st = status\n\tx = !id\n"
	es, err := ParseConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var drop []Entry
	for _, e := range es {
		if e.Name == "core.fsmonitor" || e.Name == "alias.x" || e.Name == "alias.st" {
			drop = append(drop, e)
		}
	}
	out := RemoveSpans([]byte(in), drop)
	want := "[core]\n\tbare = false\n\tpager = less\n[alias] "
	if string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
	rest, err := ParseConfig(out)
	if err != nil || strings.Join(kv(rest), "|") != "core.bare=false|core.pager=less" {
		t.Errorf("after removal: %q, %v", kv(rest), err)
	}
}

// checkGit compares ParseConfig with git's own reading of data (git config --list -z
// reads the file with includes off), where git is installed. Under CI it must be.
func checkGit(t *testing.T, data []byte, got []Entry) {
	t.Helper()
	want, ok, err := gitList(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("git refuses %q, ParseConfig accepts it as %q", data, kv(got))
		return
	}
	if g := kv(got); strings.Join(g, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("input %q:\nParseConfig %q\ngit         %q", data, g, want)
	}
}

var gitBin string

// gitList runs git on data; ok is false when git refuses the file.
func gitList(t testing.TB, data []byte) (entries []string, ok bool, err error) {
	if gitBin == "" {
		testenv.RequireTool(t, "git")
		gitBin, _ = exec.LookPath("git")
	}
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		return nil, false, err
	}
	cmd := exec.Command(gitBin, "config", "--file", f, "--no-includes", "--list", "-z")
	cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin", "LC_ALL=C"}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		if strings.Contains(e.String(), "bad config") || strings.Contains(e.String(), "fatal") {
			return nil, false, nil
		}
		return nil, false, err
	}
	entries = []string{}
	for _, rec := range strings.Split(o.String(), "\x00") {
		if rec == "" {
			continue
		}
		if k, v, found := strings.Cut(rec, "\n"); found {
			entries = append(entries, k+"="+v)
		} else {
			entries = append(entries, k)
		}
	}
	return entries, true, nil
}

// FuzzParseConfig: never a panic; spans in order and in bounds; removing any entries
// leaves a file that reads as exactly the others; and git reads every input as
// ParseConfig does (the seed corpus in testdata/fuzz runs in every go test).
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tfsmonitor = id\n", "[a \"b\"]k=v\n", "[a.b]\nk\n", "[alias]\nx = !sh -c \\\n 'id'\n",
		"[a]\nk = \"x\\\"y\" ; c\n", "\xef\xbb\xbf[a]\r\nk=v\r\n", "[includeIf \"gitdir:/x/\"]\npath=y\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseConfig(data)
		last := 0
		for _, e := range es {
			if e.Start < last || e.End <= e.Start || e.End > len(data) {
				t.Fatalf("span [%d,%d) after %d in %d bytes", e.Start, e.End, last, len(data))
			}
			last = e.End
		}
		if err != nil {
			if _, ok, gerr := gitList(t, data); gerr != nil || ok {
				t.Fatalf("ParseConfig refuses %q (%v), git accepts it (%v)", data, err, gerr)
			}
			return
		}
		checkGit(t, data, es)
		var keep, drop []Entry
		for i, e := range es {
			if i%2 == 0 {
				drop = append(drop, e)
			} else {
				keep = append(keep, e)
			}
		}
		rest, err := ParseConfig(RemoveSpans(data, drop))
		if err != nil || strings.Join(kv(rest), "\x00") != strings.Join(kv(keep), "\x00") {
			t.Fatalf("removing %q from %q: %q, %v; want %q", kv(drop), data, kv(rest), err, kv(keep))
		}
	})
}
