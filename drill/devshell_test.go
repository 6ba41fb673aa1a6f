package drill

import "testing"

import "github.com/heavy-duty/box/envaudit"

// The dev shell's variables show in the env group; one that looks like a secret WARNs
// when it is present inside, and the host's or box's own variables are not its rows.
func TestDevShellProbes(t *testing.T) {
	vars := []envaudit.Var{
		{Name: "DEV_GREETING", Value: "hello", Origin: "devshell"},
		{Name: "DEPLOY_TOKEN", Value: "x", Origin: "devshell"},
		{Name: "GITHUB_TOKEN", Value: "ghp_0123456789abcdef", Origin: "--env"},
		{Name: "PATH", Value: "/nix/store/x/bin", Origin: "box"},
	}
	ps := DevShellProbes(vars)
	if len(ps) != 2 || ps[0].ID != "env:devshell" || len(ps[0].Targets) != 2 || ps[1].ID != "env:devshell:DEPLOY_TOKEN" {
		t.Fatalf("probes: %+v", ps)
	}
	rs := Judge(Plan{Probes: ps}, []Observation{{ID: "env:devshell", Seen: true}, {ID: "env:devshell:DEPLOY_TOKEN", Seen: true}})
	if rs[0].Status != Pass || rs[1].Status != Warn {
		t.Errorf("results: %+v", rs)
	}
	// The shell's variables missing inside: the sandbox did not start in it.
	rs = Judge(Plan{Probes: ps}, []Observation{{ID: "env:devshell"}, {ID: "env:devshell:DEPLOY_TOKEN"}})
	if rs[0].Status != Fail {
		t.Errorf("absent dev shell: %+v", rs[0])
	}
	if DevShellProbes(vars[2:]) != nil {
		t.Error("rows without a dev shell")
	}
}
