package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/heavy-duty/box/policy"
)

// TestTierNamesFromOneList: the tier names box shows (top-level help, the --network
// flags, completion) and the docs that list them all name every tier of policy.Tiers,
// in its order: a new tier cannot be missing from one of them.
func TestTierNamesFromOneList(t *testing.T) {
	names := policy.TierNames()
	var out bytes.Buffer
	root := newRoot(newEnv(nil, &out, &out))
	if !strings.Contains(root.Long, strings.Join(names, ", ")) {
		t.Errorf("box --help does not list the tiers %q:\n%s", names, root.Long)
	}
	for _, path := range [][]string{{"run"}, {"new"}, {"drill"}} {
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("network")
		if f == nil || !strings.Contains(f.Usage, policy.TierList("or")) {
			t.Errorf("box %s --network help does not list the tiers: %v", path[0], f)
		}
		if comp, ok := c.GetFlagCompletionFunc("network"); ok {
			got, _ := comp(c, nil, "")
			if strings.Join(got, " ") != strings.Join(names, " ") {
				t.Errorf("box %s --network completes %q, want %q", path[0], got, names)
			}
		} else {
			t.Errorf("box %s --network has no completion", path[0])
		}
	}
	// A docs line that lists tiers as quoted values lists them all.
	quoted := regexp.MustCompile("`\"(none|allowlist|internet|full)\"`")
	for _, doc := range []string{"../../docs/json.md", "../../docs/profiles-and-templates.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "`\"none\"`") || len(quoted.FindAllString(line, -1)) < 2 {
				continue
			}
			for _, n := range names {
				if !strings.Contains(line, "`\""+n+"\"`") {
					t.Errorf("%s:%d lists tiers without %q: %s", doc, i+1, n, line)
				}
			}
		}
	}
}
