package postrun

import (
	"fmt"
	"strings"
)

// Entry is one key = value line of a git config file, as git itself reads it.
type Entry struct {
	// Name is the variable as git's config callbacks see it: the section lowercased, the
	// subsection as written in [section "sub"] (lowercased in the legacy [section.sub]
	// form), the key lowercased, joined with dots. Git splits it at the first and the
	// last dot (parse_config_key), and so does Parts.
	Name string `json:"name"`
	// Value is the value after unquoting and unescaping; HasValue is false for a bare
	// "key" line, which git reads as boolean true.
	Value    string `json:"value"`
	HasValue bool   `json:"has_value"`
	// Line is the 1-based line the key starts on; Start and End are the byte span of the
	// key through its line end (continuation lines included), which RemoveSpans cuts.
	Line  int `json:"line"`
	Start int `json:"start"`
	End   int `json:"end"`
}

// Parts splits Name as git does: section up to the first dot, key after the last,
// subsection (maybe empty, maybe dotted) between them.
func (e Entry) Parts() (section, subsection, key string) {
	first := strings.IndexByte(e.Name, '.')
	last := strings.LastIndexByte(e.Name, '.')
	if first < 0 {
		return "", "", e.Name
	}
	if first == last {
		return e.Name[:first], "", e.Name[last+1:]
	}
	return e.Name[:first], e.Name[first+1 : last], e.Name[last+1:]
}

// ParseError is a line git would reject ("bad config line N"): git dies reading such a
// file, so none of its entries take effect.
type ParseError struct{ Line int }

func (e *ParseError) Error() string { return fmt.Sprintf("bad config line %d", e.Line) }

// ParseConfig reads data with git's own rules (config.c, git_parse_source): a UTF-8 BOM
// at the start, '#' and ';' comments, [section], [section "subsection"] with \" and \\
// escapes, the legacy [section.subsection], keys on the same line as their header,
// bare boolean keys, quoted values, the \n \t \b \" \\ escapes, a backslash-newline
// continuation, CRLF line ends, and a NUL ending a name or value as it ends git's C
// string. On a bad line it returns the entries before it and a *ParseError.
func ParseConfig(data []byte) ([]Entry, error) {
	p := &cfgParser{b: data, line: 1}
	return p.parse()
}

type cfgParser struct {
	b    []byte
	i    int
	line int
	eof  bool
}

// next is git's get_next_char: CRLF reads as LF, the end of input as a final LF.
func (p *cfgParser) next() byte {
	if p.i >= len(p.b) {
		p.eof = true
		return '\n'
	}
	c := p.b[p.i]
	p.i++
	if c == '\r' && p.i < len(p.b) && p.b[p.i] == '\n' {
		p.i++
		c = '\n'
	}
	if c == '\n' {
		p.line++
	}
	return c
}

// git's sane_ctype: only these four bytes are space; letters and digits are ASCII only.
func gitSpace(c byte) bool   { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func gitAlpha(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func gitKeyChar(c byte) bool { return gitAlpha(c) || c >= '0' && c <= '9' || c == '-' }
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// cString is what a C consumer of git's strbuf sees: everything up to the first NUL.
func cString(s []byte) string {
	for i, c := range s {
		if c == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}

func (p *cfgParser) parse() ([]Entry, error) {
	var out []Entry
	var base []byte // "section." or "section.sub." of the current header
	comment := false
	bom := "\xef\xbb\xbf"
	bi := 0
	for {
		lineAt := p.line
		start := p.i
		c := p.next()
		if bi >= 0 && bi < len(bom) {
			if c == bom[bi] && !p.eof {
				bi++
				continue
			}
			if bi > 0 { // a partial BOM is refused
				return out, &ParseError{lineAt}
			}
			bi = -1
		}
		bi = -1
		switch {
		case c == '\n':
			if p.eof {
				return out, nil
			}
			comment = false
			continue
		case comment, gitSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			name, ok := p.baseVar()
			if !ok || len(name) == 0 {
				return out, &ParseError{p.errLine(lineAt)}
			}
			base = append(name, '.')
			continue
		case !gitAlpha(c):
			return out, &ParseError{lineAt}
		}
		name := append(append([]byte{}, base...), lower(c))
		e, ok := p.value(name)
		if !ok {
			return out, &ParseError{p.errLine(lineAt)}
		}
		e.Line, e.Start, e.End = lineAt, start, p.i
		out = append(out, e)
	}
}

// errLine is the line git names in its error: a line-ending read while failing is not
// counted (git's linenr-- in those paths).
func (p *cfgParser) errLine(at int) int {
	if p.line > at {
		return p.line - 1
	}
	return p.line
}

// baseVar reads a section header after '[' (git's get_base_var and
// get_extended_base_var).
func (p *cfgParser) baseVar() ([]byte, bool) {
	var name []byte
	for {
		c := p.next()
		if p.eof {
			return nil, false
		}
		if c == ']' {
			return name, true
		}
		if gitSpace(c) {
			return p.extendedBaseVar(name, c)
		}
		if !gitKeyChar(c) && c != '.' {
			return nil, false
		}
		name = append(name, lower(c))
	}
}

func (p *cfgParser) extendedBaseVar(name []byte, c byte) ([]byte, bool) {
	for {
		if c == '\n' {
			return nil, false
		}
		c = p.next()
		if !gitSpace(c) {
			break
		}
	}
	if c != '"' {
		return nil, false
	}
	name = append(name, '.')
	for {
		c := p.next()
		if c == '\n' {
			return nil, false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = p.next(); c == '\n' {
				return nil, false
			}
		}
		name = append(name, c)
	}
	if p.next() != ']' {
		return nil, false
	}
	return name, true
}

// value reads the rest of a key and its value (git's get_value and parse_value).
func (p *cfgParser) value(name []byte) (Entry, bool) {
	var c byte
	for {
		c = p.next()
		if p.eof || !gitKeyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	e := Entry{Name: cString(name)}
	if c == '\n' {
		return e, true
	}
	if c != '=' {
		return e, false
	}
	var v []byte
	quote, comment, space := false, false, 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return e, false
			}
			e.Value, e.HasValue = cString(v), true
			return e, true
		}
		if comment {
			continue
		}
		if gitSpace(c) && !quote {
			if len(v) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			v = append(v, ' ')
		}
		if c == '\\' {
			switch c = p.next(); c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return e, false
			}
			v = append(v, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}

// RemoveSpans returns data without the given entries' spans (each from its key through
// its line end). A key that shares its line with a section header leaves the header.
func RemoveSpans(data []byte, drop []Entry) []byte {
	cut := make([]bool, len(data))
	for _, e := range drop {
		from := max(e.Start, 0)
		// The indentation of a line the key starts goes with it.
		for j := from; j > 0 && (data[j-1] == ' ' || data[j-1] == '\t'); j-- {
			if j-1 == 0 || data[j-2] == '\n' {
				from = j - 1
			}
		}
		for i := from; i < min(e.End, len(data)); i++ {
			cut[i] = true
		}
	}
	out := make([]byte, 0, len(data))
	for i, c := range data {
		if !cut[i] {
			out = append(out, c)
		}
	}
	// A value that ended the file without a newline leaves the line before open; that
	// is fine for git, nothing to repair.
	return out
}
