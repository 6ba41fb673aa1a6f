package protect

import (
	"path/filepath"
	"strings"
)

// envrcLoaders are the commands of an .envrc that have direnv load another file: the
// stdlib's (source_env runs another .envrc, dotenv exports a .env, ".env" by default)
// and the shell's own.
var envrcLoaders = map[string]string{
	"source_env": "", "source_env_if_exists": "",
	"dotenv": ".env", "dotenv_if_exists": ".env",
	"source": "", ".": "",
	"source_up": ".envrc", "source_up_if_exists": ".envrc",
}

// EnvrcLoads lists the files an .envrc in dir has direnv load, each made absolute
// against dir (direnv evaluates the .envrc there), and notes for each it names in a way
// box cannot resolve (a variable, a glob). It reads the words as a shell would split
// them, without running anything: a loader counts where a command starts. Pure.
func EnvrcLoads(envrc []byte, dir string) (paths, notes []string) {
	// A backslash before a newline joins the lines (dotenv \<newline> .env.dev loads
	// .env.dev).
	text := strings.ReplaceAll(strings.ReplaceAll(string(envrc), "\r\n", "\n"), "\\\n", "")
	for _, line := range strings.Split(text, "\n") {
		words := shellWords(line)
		start := true
		for i := 0; i < len(words); i++ {
			w := words[i]
			if w.sep {
				start = true
				continue
			}
			if !start {
				continue
			}
			start = false
			if w.text == "then" || w.text == "do" || w.text == "else" || w.text == "!" || w.text == "command" || w.text == "builtin" || assignment(w) {
				// A keyword, a command's wrapper or a variable set for it: the command
				// comes next.
				start = true
				continue
			}
			kind := ""
			switch {
			case w.quoted:
			case w.text == "use" && i+1 < len(words) && (words[i+1].text == "flake" || words[i+1].text == "nix"):
				i++
				kind = words[i].text
			case w.text == "use_flake" || w.text == "use_nix":
				// The stdlib's functions behind use flake and use nix, called by name.
				kind = strings.TrimPrefix(w.text, "use_")
			}
			if kind != "" {
				// use flake [DIR[#attr]], use nix [FILE]: the host's Nix evaluates what
				// they name (its shellHook runs in your shell).
				arg := "."
				if i+1 < len(words) && !words[i+1].sep {
					i++
					arg = words[i].text
				}
				if arg == "-p" || arg == "--packages" {
					continue // use nix -p hello: no file of the tree's
				}
				if strings.HasPrefix(arg, "-") {
					arg = "." // use flake --impure, use nix --pure: the directory's own
				}
				p, n := useLoads(kind, arg, dir)
				paths, notes = append(paths, p...), append(notes, n...)
				continue
			}
			def, ok := envrcLoaders[w.text]
			if !ok || w.quoted {
				continue
			}
			arg := def
			if i+1 < len(words) && !words[i+1].sep {
				arg = words[i+1].text
				i++
			}
			switch {
			case arg == "":
				continue
			case strings.ContainsAny(arg, "$`*?[~"):
				notes = append(notes, w.text+" "+arg)
				continue
			case strings.HasPrefix(w.text, "source_up") && !filepath.IsAbs(arg):
				// source_up [FILE]: the first FILE (.envrc) in the directories above.
				for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
					paths = append(paths, filepath.Join(d, arg))
					if d == filepath.Dir(d) {
						break
					}
				}
				continue
			case !filepath.IsAbs(arg):
				arg = filepath.Join(dir, arg)
			}
			paths = append(paths, filepath.Clean(arg))
		}
	}
	return paths, notes
}

// assignment: w is NAME=value, a variable set for the command that follows.
func assignment(w shellWord) bool {
	name, _, ok := strings.Cut(w.text, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

type shellWord struct {
	text   string
	quoted bool // the word held a quote (a loader's name in quotes is not the command)
	sep    bool // a command separator: ; & | ( ) { } and the line's start
}

// shellWords splits a line into words and separators as the shell would, quotes
// removed; a comment ends it.
func shellWords(line string) []shellWord {
	var out []shellWord
	var cur strings.Builder
	in, quoted := false, false
	flush := func() {
		if in {
			out = append(out, shellWord{text: cur.String(), quoted: quoted})
		}
		cur.Reset()
		in, quoted = false, false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			in, quoted = true, true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in, quoted = true, true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
		case c == '\\' && i+1 < len(line):
			in = true
			i++
			cur.WriteByte(line[i])
		case c == '#' && !in:
			flush()
			return out
		case c == ' ' || c == '\t' || c == '\r':
			flush()
		case strings.IndexByte(";&|(){}", c) >= 0:
			flush()
			out = append(out, shellWord{text: string(c), sep: true})
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// useLoads is what direnv's `use flake ARG` or `use nix ARG` (ARG "." when none) has the
// host's Nix evaluate, for a local ARG: a flake directory's flake.nix and flake.lock, a
// nix file, or a directory's shell.nix and default.nix. A flake reference that is not a
// path (github:..., nixpkgs#hello) is none of the tree's.
func useLoads(kind, arg, dir string) (paths, notes []string) {
	if strings.ContainsAny(arg, "$`*?[~") {
		return nil, []string{"use " + kind + " " + arg}
	}
	if kind == "flake" {
		arg, _, _ = strings.Cut(arg, "#")
		arg = strings.TrimPrefix(arg, "path:")
		if !strings.HasPrefix(arg, ".") && !strings.HasPrefix(arg, "/") {
			return nil, nil
		}
	}
	if !filepath.IsAbs(arg) {
		arg = filepath.Join(dir, arg)
	}
	arg = filepath.Clean(arg)
	switch {
	case kind == "flake":
		return []string{filepath.Join(arg, "flake.nix"), filepath.Join(arg, "flake.lock")}, nil
	case strings.HasSuffix(arg, ".nix"):
		return []string{arg}, nil
	default:
		return []string{filepath.Join(arg, "shell.nix"), filepath.Join(arg, "default.nix")}, nil
	}
}
