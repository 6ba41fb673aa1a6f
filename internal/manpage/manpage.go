// Package manpage renders a cobra command tree as man pages, in plain roff. It is not
// cobra/doc: that one's markdown converter cost box half a millisecond of start-up on
// every run, for a verb rarely used.
package manpage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Book is what the pages say beyond the command tree.
type Book struct {
	Version string
	Date    time.Time
	// ExitStatus is a page's EXIT STATUS section.
	ExitStatus func(*cobra.Command) string
	// Environment and Files are the root page's ENVIRONMENT and FILES sections.
	Environment, Files string
}

// Date is SOURCE_DATE_EPOCH's time when getenv has a valid one (reproducible pages),
// else now.
func Date(getenv func(string) string) time.Time {
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0)
		}
	}
	return time.Now()
}

// Write writes a page for root and every available command below it into dir, which it
// creates.
func (b Book) Write(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return b.writeTree(root, dir)
}

func (b Book) writeTree(c *cobra.Command, dir string) error {
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := b.writeTree(sub, dir); err != nil {
			return err
		}
	}
	file := filepath.Join(dir, pageName(c)+".1")
	if err := os.WriteFile(file, []byte(b.Page(c)), 0o644); err != nil {
		return fmt.Errorf("man page %s: %w", file, err)
	}
	return nil
}

// pageName is a command's page: its path with dashes (box-run).
func pageName(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// Page renders one command's page. Pure but for the command tree it reads.
func (b Book) Page(c *cobra.Command) string {
	var w strings.Builder
	prog := c.Root().Name()
	fmt.Fprintf(&w, ".TH \"%s\" \"1\" \"%s\" \"%s %s\" \"%s manual\"\n", strings.ToUpper(prog), b.Date.UTC().Format("Jan 2006"),
		prog, roff(b.Version), prog)
	fmt.Fprintf(&w, ".SH NAME\n%s \\- %s\n", pageName(c), roff(c.Short))
	fmt.Fprintf(&w, ".SH SYNOPSIS\n.nf\n%s\n.fi\n", roffLines(c.UseLine()))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&w, ".SH DESCRIPTION\n%s\n", roffParagraphs(desc))
	writeFlags := func(title string, fs *pflag.FlagSet) {
		if !fs.HasAvailableFlags() {
			return
		}
		fmt.Fprintf(&w, ".SH %s\n", title)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			head := "\\-\\-" + roff(f.Name)
			if f.Shorthand != "" {
				head = "\\-" + roff(f.Shorthand) + ", " + head
			}
			if f.Value.Type() != "bool" {
				head += " " + roff(f.Value.Type())
			}
			fmt.Fprintf(&w, ".TP\n\\fB%s\\fR\n%s\n", head, roff(f.Usage))
		})
	}
	writeFlags("OPTIONS", c.NonInheritedFlags())
	writeFlags("OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	if c.Example != "" {
		fmt.Fprintf(&w, ".SH EXAMPLE\n.nf\n%s\n.fi\n", roffLines(c.Example))
	}
	fmt.Fprintf(&w, ".SH EXIT STATUS\n%s\n", roffParagraphs(b.ExitStatus(c)))
	if !c.HasParent() {
		fmt.Fprintf(&w, ".SH ENVIRONMENT\n%s\n", roffParagraphs(b.Environment))
		fmt.Fprintf(&w, ".SH FILES\n%s\n", roffParagraphs(b.Files))
	}
	var see []string
	if c.HasParent() {
		see = append(see, pageName(c.Parent())+"(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			see = append(see, pageName(sub)+"(1)")
		}
	}
	fmt.Fprintf(&w, ".SH SEE ALSO\n%s\n", roff(strings.Join(see, ", ")))
	return w.String()
}

// roff escapes text for a roff line: backslashes and hyphens.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// roffLines escapes each line and protects those a roff reader would take as requests.
func roffLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		l = roff(l)
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// roffParagraphs keeps blank-line paragraphs and the help text's own line breaks.
func roffParagraphs(s string) string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		out = append(out, ".PP\n.nf\n"+roffLines(p)+"\n.fi")
	}
	return strings.Join(out, "\n")
}
