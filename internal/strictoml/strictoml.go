// Package strictoml decodes TOML strictly: a key the target does not know is an error
// naming the file, the line where it can be found, and the key. A security tool must not
// ignore a setting it does not understand.
package strictoml

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// Decode decodes data (read from file, used only in messages) into v.
func Decode(file string, data []byte, v any) error {
	md, err := toml.NewDecoder(strings.NewReader(string(data))).Decode(v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d: %s", file, pe.Position.Line, pe.Message)
		}
		// Type mismatches come back as plain errors carrying the line in their text,
		// `toml: line 3 (last key "cpu"): incompatible types: ...`: say file:line.
		if m := typeErrRE().FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("%s:%s: key %s: %s", file, m[1], m[2], m[3])
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		// A whole unknown table is reported once, by its name.
		return &UnknownKeyError{File: file, Line: lineOf(data, k), Key: k.String()}
	}
	return nil
}

// UnknownKeyError is a key the decoder's target has no field for.
type UnknownKeyError struct {
	File string
	Line int // 0 when the line could not be found
	Key  string
}

func (e *UnknownKeyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: unknown key %q", e.File, e.Line, e.Key)
	}
	return fmt.Sprintf("%s: unknown key %q", e.File, e.Key)
}

// Last is the key's last component ("mounts.size" -> "size").
func (e *UnknownKeyError) Last() string {
	i := strings.LastIndexByte(e.Key, '.')
	return e.Key[i+1:]
}

var typeErrRE = lazyRE(`^toml: line (\d+) \(last key ("[^\n]*")\): (.*)$`)

// lazyRE compiles on first use: these serve error messages, not the start-up path.
func lazyRE(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

// lineOf finds the line that defines k's last component, as a key or a table header.
// The decoder keeps positions private, so this scans the text; 0 if not found. A key
// inside a table ([[mounts]] size = 1) is looked for under that table's header first, so
// a top-level key of the same name earlier in the file is not mistaken for it.
func lineOf(data []byte, k toml.Key) int {
	if len(k) == 0 {
		return 0
	}
	lines := strings.Split(string(data), "\n")
	last := regexp.QuoteMeta(k[len(k)-1])
	keyRE := regexp.MustCompile(`^\s*("?` + last + `"?|'` + last + `')\s*(=|\.)`)
	parent, whole := strings.Join(k[:len(k)-1], "."), strings.Join(k, ".")
	table, inString := "", ""
	for i, line := range lines {
		// Lines inside a multi-line string are text, not keys.
		was := inString
		inString = multiline(line, inString)
		if was != "" {
			continue
		}
		if m := headerRE().FindStringSubmatch(line); m != nil {
			table = normTable(m[1])
			if table == whole {
				return i + 1 // the unknown key is a table
			}
			continue
		}
		if table == parent && keyRE.MatchString(line) {
			return i + 1
		}
	}
	// Not found where it belongs (an inline table, a dotted key): the first line that
	// names it at all.
	re := regexp.MustCompile(`^\s*(\[\[?\s*)?("?` + last + `"?|'` + last + `')\s*(=|\]|\.)`)
	re2 := regexp.MustCompile(`^\s*\[\[?[^\]]*\.` + last + `\s*\]`)
	re3 := regexp.MustCompile(`[{,.]\s*("?` + last + `"?|'` + last + `')\s*=`)
	for i, line := range lines {
		if re.MatchString(line) || re2.MatchString(line) || re3.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

// multiline returns the multi-line string delimiter (three double or single quotes) open
// after line, given the one open before it ("" for none).
func multiline(line, open string) string {
	for line != "" {
		if open != "" {
			i := strings.Index(line, open)
			if i < 0 {
				return open
			}
			line, open = line[i+3:], ""
			continue
		}
		i, j := strings.Index(line, `"""`), strings.Index(line, "'''")
		switch {
		case i < 0 && j < 0:
			return ""
		case j < 0 || (i >= 0 && i < j):
			line, open = line[i+3:], `"""`
		default:
			line, open = line[j+3:], "'''"
		}
	}
	return open
}

var headerRE = lazyRE(`^\s*\[\[?([^\[\]]*)\]\]?\s*(#.*)?$`)

// normTable turns a header's name ( "a" . b ) into the decoder's dotted form (a.b).
func normTable(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}
