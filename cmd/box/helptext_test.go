package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every help file is some command's help or example or a part of its man page, and no
// {{key}} is left unfilled.
func TestHelpTextComplete(t *testing.T) {
	texts := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range []string{c.Long, c.Example} {
			if strings.Contains(s, "{{") {
				t.Errorf("box %s: an unfilled key in its help:\n%s", c.CommandPath(), s)
			}
			texts[s] = true
		}
		texts[exitStatusText(c)] = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	e := newEnv(nil, nil, nil)
	walk(newRoot(e))
	texts[manBook(e).Environment], texts[manBook(e).Files] = true, true
	files, err := helpFiles.ReadDir("help")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v (%d)", err, len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".txt")
		b, _ := helpFiles.ReadFile("help/" + f.Name())
		if strings.Contains(string(b), "{{") {
			continue // filled in: its command's text differs from the file
		}
		if !texts[helpText(name)] {
			t.Errorf("help/%s is no command's help or example", f.Name())
		}
	}
}
