package main

import (
	"embed"
	"strings"
)

// Long help and examples live in help/NAME.txt and help/NAME.example.txt, one file per
// command: prose is easier to keep true as text, and this package's Go stays the
// commands and their rendering. --help, the man pages and docs read the same text.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText is the text of help/NAME.txt without its final newline, with each {{KEY}}
// in it replaced by the value that follows the key in subst (names box owns, such as a
// file or an environment variable, kept in one place in the code). A missing file or an
// unfilled key is a build mistake, and TestHelpTextComplete finds it.
func helpText(name string, subst ...string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("box: no help text " + name)
	}
	return strings.NewReplacer(subst...).Replace(strings.TrimSuffix(string(b), "\n"))
}
