package drill

// The unknowns rows (issue 19): what the post-run audit cannot read must hide nothing.
// Inside, the probe plants a repository whose core.fsmonitor writes a marker, then
// takes its directory's read bit away (chmod 111: git, run later by the same user, still
// goes in by name; a walk that lists directories does not). Outside, after the run,
// Settle runs git status in it as the operator's prompt would on cd. The audit, granting
// itself the modes it needs, has moved the repository aside (PASS); with that switched
// off in a test build (BOX_UNSAFE_OFF=audit-modes), the BREACH.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// KindHiddenRepo: like KindHostExec, with the planted repository's top made mode 111.
const KindHiddenRepo Kind = "host-exec-hidden"

// hiddenRepoProbe is the row, planted under the drill's own name in the working
// directory.
func hiddenRepoProbe(in Input, name string) Probe {
	p := Probe{ID: "host-exec:unreadable-repo", Group: "host-exec", Name: "repo in a mode-111 directory, host git status",
		Kind: KindHiddenRepo, Want: Blocked, Expected: "nothing runs on the host",
		Targets: []string{filepath.Join(in.Workdir, name+"-hidden"), filepath.Join(in.Workdir, name+"-hidden-ran")}}
	if in.Facts.Git == "" {
		p.Skip = "git not installed on the host"
	}
	return p
}

// probeHiddenRepo (inside) plants the repository, then makes its top unlistable.
func probeHiddenRepo(targets []string) (bool, string, error) {
	seen, detail, err := probePlantRepo(targets)
	if !seen || err != nil {
		return seen, detail, err
	}
	if err := os.Chmod(targets[0], 0o111); err != nil {
		return false, "planted, but not hidden (" + errName(err) + ")", nil
	}
	return true, detail + ", its top chmod 111", nil
}

// settleHiddenRepo (outside) runs git status in the planted repository, its top still
// mode 111 (cd works; git finds .git by name), looks for the marker, and removes it all.
func settleHiddenRepo(pr Probe, o Observation) Observation {
	repo, marker := pr.Targets[0], pr.Targets[1]
	if o.Seen {
		cmd := exec.Command("git", "-c", "safe.directory="+repo, "status", "--porcelain")
		cmd.Dir = repo
		cmd.Run() // fails once the audit moved the repository aside
		if _, err := os.Lstat(marker); err == nil {
			o.OnHost = true
			o.Detail += "; the host's git status RAN the planted core.fsmonitor"
		} else {
			o.Detail += "; the host's git status ran nothing"
		}
	}
	os.Remove(marker)
	os.Chmod(repo, 0o755)
	if err := os.RemoveAll(repo); err != nil && !errors.Is(err, os.ErrNotExist) {
		o.Detail += "; could not remove it from the host: " + err.Error()
	}
	return o
}
