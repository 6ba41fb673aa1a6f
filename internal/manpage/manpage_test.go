package manpage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// A page escapes roff's specials (a line starting with a dot would be a request), leaves
// hidden flags out, names its parent and children, and the root page alone has
// ENVIRONMENT and FILES.
func TestPage(t *testing.T) {
	root := &cobra.Command{Use: "prog", Short: "the root", Run: func(*cobra.Command, []string) {}}
	sub := &cobra.Command{Use: "sub-verb", Short: "a verb", Long: "first line\n.not a request\n\nsecond paragraph",
		Example: "  prog sub-verb", Run: func(*cobra.Command, []string) {}}
	sub.Flags().String("shown", "", "a flag")
	sub.Flags().Bool("secret", false, "hidden")
	_ = sub.Flags().MarkHidden("secret")
	root.AddCommand(sub)
	b := Book{Version: "1.0-x", Date: time.Unix(1, 0), ExitStatus: func(c *cobra.Command) string { return "status of " + c.Name() },
		Environment: "ENV", Files: "FILES"}
	page := b.Page(sub)
	for _, want := range []string{
		".TH \"PROG\" \"1\" \"Jan 1970\" \"prog 1.0\\-x\" \"prog manual\"\n",
		".SH NAME\nprog-sub-verb \\- a verb\n",
		"first line\n\\&.not a request\n.fi\n.PP\n.nf\nsecond paragraph",
		".TP\n\\fB\\-\\-shown string\\fR\na flag\n",
		".SH EXIT STATUS\n.PP\n.nf\nstatus of sub\\-verb\n.fi\n",
		".SH SEE ALSO\nprog(1)\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "secret") || strings.Contains(page, "ENVIRONMENT") {
		t.Errorf("a hidden flag or the root's sections on a verb's page:\n%s", page)
	}
	rp := b.Page(root)
	if !strings.Contains(rp, ".SH ENVIRONMENT\n.PP\n.nf\nENV\n.fi\n.SH FILES\n") || !strings.Contains(rp, "prog\\-sub\\-verb(1)") {
		t.Errorf("root page:\n%s", rp)
	}
	dir := filepath.Join(t.TempDir(), "new")
	if err := b.Write(root, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"prog.1", "prog-sub-verb.1"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// SOURCE_DATE_EPOCH dates the pages when it is a number.
func TestDate(t *testing.T) {
	if d := Date(func(string) string { return "86400" }); !d.Equal(time.Unix(86400, 0)) {
		t.Errorf("epoch: %v", d)
	}
	if d := Date(func(string) string { return "soon" }); time.Since(d) > time.Hour {
		t.Errorf("bad epoch: %v, want now", d)
	}
}
