package main

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

func newManCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:                   "man DIR",
		Short:                 "write man pages for box and each of its verbs into DIR",
		Long:                  helpText("man"),
		Example:               helpText("man.example"),
		GroupID:               groupOther,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("run 'box man --help' for usage", "man takes one directory to write the pages into")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			date := time.Now()
			if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					date = time.Unix(n, 0)
				}
			}
			return writeManTree(cmd.Root(), dir, date)
		},
	}
}

// writeManTree writes a page for c and for every available command below it. The pages
// are rendered here, in plain roff, rather than by cobra/doc: its markdown converter
// cost box half a millisecond of start-up on every run for a verb rarely used.
func writeManTree(c *cobra.Command, dir string, date time.Time) error {
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := writeManTree(sub, dir, date); err != nil {
			return err
		}
	}
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	file := filepath.Join(dir, name+".1")
	if err := os.WriteFile(file, []byte(manPage(c, date)), 0o644); err != nil {
		return fmt.Errorf("man page %s: %w", file, err)
	}
	return nil
}

// manPage renders one command's page. Pure but for the command tree it reads.
func manPage(c *cobra.Command, date time.Time) string {
	var b strings.Builder
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".TH \"BOX\" \"1\" \"%s\" \"box %s\" \"box manual\"\n", date.UTC().Format("Jan 2006"), roff(boxVersion()))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", name, roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n%s\n.fi\n", roffLines(c.UseLine()))
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roffParagraphs(desc))
	writeFlags := func(title string, fs *pflag.FlagSet) {
		if !fs.HasAvailableFlags() {
			return
		}
		fmt.Fprintf(&b, ".SH %s\n", title)
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
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", head, roff(f.Usage))
		})
	}
	writeFlags("OPTIONS", c.NonInheritedFlags())
	writeFlags("OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLE\n.nf\n%s\n.fi\n", roffLines(c.Example))
	}
	fmt.Fprintf(&b, ".SH EXIT STATUS\n%s\n", roffParagraphs(exitStatusText(c)))
	if !c.HasParent() {
		fmt.Fprintf(&b, ".SH ENVIRONMENT\n%s\n", roffParagraphs(manEnvironment))
		fmt.Fprintf(&b, ".SH FILES\n%s\n", roffParagraphs(manFiles))
	}
	var see []string
	if c.HasParent() {
		see = append(see, strings.ReplaceAll(c.Parent().CommandPath(), " ", "-")+"(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			see = append(see, strings.ReplaceAll(sub.CommandPath(), " ", "-")+"(1)")
		}
	}
	fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", roff(strings.Join(see, ", ")))
	return b.String()
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

// exitStatusText is a page's EXIT STATUS: the runners' table (main.go's runners) or the
// other verbs' three codes; box's own page has both.
func exitStatusText(c *cobra.Command) string {
	const runner = `run, exec and shell exit with the command's own status (128+N when signal N
ended it); box's own ends use the codes env, docker and podman use:
125 box itself failed (a bad flag or argument, a refusal, no such box,
    a sandbox or tier that could not start, a failed post-run audit)
126 the command was found but is not executable
127 the command was not found
A 126 or 127 without a "box: error:" line is the command's own.`
	const other = `0 success
1 failure (box says why on stderr: "box: error: ...")
2 the command line was wrong (an unknown flag or verb, a missing argument)`
	switch {
	case !c.HasParent():
		return other + "\n\n" + runner
	case runners[c.Name()] && c.Parent() != nil && !c.Parent().HasParent():
		return runner
	}
	return other
}

// manEnvironment and manFiles are box.1's ENVIRONMENT and FILES.
const manEnvironment = `BOX_PROFILE: the profile used when --profile is not given (and, like --profile, the backend it names).

BOX_REMOTE: the Incus remote vm boxes live on (box remote).

BOX_INTERNET_HELPER: the internet tier's helper (box chooses when unset).

HOME, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_RUNTIME_DIR: where box keeps its configuration, data and run-time sockets.

INCUS_SOCKET, INCUS_DIR: the local incusd's socket and directory (default /var/lib/incus).

SOURCE_DATE_EPOCH: the man pages' date (box man).`

const manFiles = `$XDG_CONFIG_HOME/box/profiles/NAME.toml, $XDG_CONFIG_HOME/box/templates/NAME/: your profiles and templates (docs/profiles-and-templates.md).

$XDG_DATA_HOME/box/instances/: each project's and profile's instance directory (the sandbox's ~/.claude, its SANDBOX.md).

$XDG_DATA_HOME/box/boxes/: persistent bwrap boxes (their homes and snapshots).

$XDG_DATA_HOME/box/quarantine/: what the post-run audit moved out of a project.`
