package drill

import (
	"slices"

	"github.com/heavy-duty/box/envaudit"
)

// DevShellProbes are the env group's rows for a Nix dev shell's variables (origin
// "devshell", backend/bwrap/devshell.go): one row that they are all there (the sandbox
// did start in the shell), and a WARN row for each that looks like a secret (it entered
// by the operator's choice of dev shell, as an allowlisted one does). Values are checked
// here, outside, and never copied into the plan.
func DevShellProbes(vars []envaudit.Var) []Probe {
	var names, flagged []string
	for _, v := range vars {
		if v.Origin != "devshell" {
			continue
		}
		names = append(names, v.Name)
		if envaudit.Check(v.Name, v.Value) != "" {
			flagged = append(flagged, v.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	slices.Sort(flagged)
	out := []Probe{{ID: "env:devshell", Group: "env", Name: "env of the Nix dev shell", Kind: KindEnv,
		Targets: names, Want: Open, Expected: "present"}}
	for _, n := range flagged {
		out = append(out, Probe{ID: "env:devshell:" + n, Group: "env", Name: "env " + n + " (dev shell)", Kind: KindEnv,
			Targets: []string{n}, Want: Allowed, Expected: "from the dev shell (looks secret)"})
	}
	return out
}
