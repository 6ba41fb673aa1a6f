package bwrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
)

// Every resolved sandbox gets the filter; a user profile's opt-in turns named groups
// off, out loud.
func TestResolveSeccomp(t *testing.T) {
	p, err := Resolve(testRequest(), testFacts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Seccomp == nil || p.Spec.Seccomp.Arch != "x86_64" || len(p.Spec.Seccomp.OptIn) != 0 {
		t.Fatalf("filter %+v", p.Spec.Seccomp)
	}
	r := testRequest()
	r.Profile.Syscalls = []string{"ptrace"}
	if p, err = Resolve(r, testFacts()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Spec.Seccomp.OptIn, []string{"ptrace"}) || !strings.Contains(strings.Join(p.Warnings, "\n"), "turns off the syscall filter's ptrace group") {
		t.Errorf("opt-in: %+v, warnings %q", p.Spec.Seccomp, p.Warnings)
	}
	// The agent is told what is refused, what was allowed back, and whom to ask.
	if md := SandboxMD(p.Policy); !strings.Contains(md, "The operator opted back into: ptrace.") || !strings.Contains(md, "may allow io_uring") {
		t.Errorf("SANDBOX.md:\n%s", md)
	}
	f := testFacts()
	f.Arch = "riscv64"
	if _, err := Resolve(testRequest(), f); err == nil || !strings.Contains(err.Error(), "riscv64") {
		t.Errorf("an architecture without a filter: %v", err)
	}
	if _, err := seccomp.ForArch("x86_64", []string{"mount"}); err == nil {
		t.Error("mount group opted out")
	}
}
