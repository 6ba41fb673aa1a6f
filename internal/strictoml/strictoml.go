// Package strictoml decodes TOML strictly: a key the target does not know is an error
// naming the file, the line where it can be found, and the key. A security tool must not
// ignore a setting it does not understand.
package strictoml

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

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

// lineOf finds the line that defines k's last component, as a key or a table header.
// The decoder keeps positions private, so this scans the text; 0 if not found.
func lineOf(data []byte, k toml.Key) int {
	if len(k) == 0 {
		return 0
	}
	last := regexp.QuoteMeta(k[len(k)-1])
	re := regexp.MustCompile(`^\s*(\[\[?\s*)?("?` + last + `"?|'` + last + `')\s*(=|\]|\.)`)
	re2 := regexp.MustCompile(`^\s*\[\[?[^\]]*\.` + last + `\s*\]`)
	for i, line := range strings.Split(string(data), "\n") {
		if re.MatchString(line) || re2.MatchString(line) {
			return i + 1
		}
	}
	return 0
}
