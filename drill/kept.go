package drill

// protect:kept-repo: what the post-run audit moves aside it keeps, in the quarantine, for
// the operator to read; a repository the run made is kept as its .git directory, and git
// run there (git log, to see what the run committed) takes that directory for a
// repository and reads its config, which the sandbox wrote. The row's run makes a
// repository in a fixture of the working directory whose config has an alias that
// touches a marker outside; after the audit, the drill runs that alias with the host's
// git in the kept copy, as the operator would read it: the marker made = breach (hostile
// review, session 16: the quarantine kept the planted .git live).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// KeptRepoID is the row's id.
const KeptRepoID = "protect:kept-repo"

// keptRepoScript makes $1/sub a repository whose config's alias st touches $2.
const keptRepoScript = `g="$1/sub/.git"
mkdir -p "$g/objects" "$g/refs/heads" "$g/hooks" || exit 3
echo 'ref: refs/heads/main' > "$g/HEAD"
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n[alias]\n\tst = !touch %s\n' "$2" > "$g/config"`

// keptRepoRow runs the probe through the session box run uses, in a scratch data
// directory (its quarantine), with the drilled plan's template and isolation.
func (b *Bwrap) keptRepoRow(p *bwrap.Plan, nonce string) Result {
	r := Result{ID: KeptRepoID, Group: "protect", Probe: "git run in the quarantine's copy of a repository the run made (its config has an alias)",
		Expected: "the kept copy is no repository: the host's git runs nothing of it"}
	if _, err := exec.LookPath("git"); err != nil {
		r.Status, r.Observed = Skip, "git not on the host"
		return r
	}
	scratch, err := scratchDirs("box-drill-kept-", "data", "markers") // linkswap.go
	if err != nil {
		r.Status, r.Observed = Error, "scratch directory: "+err.Error()
		return r
	}
	defer os.RemoveAll(scratch)
	marker := filepath.Join(scratch, "markers", "kept-repo")
	dir := filepath.Join(p.Spec.Workdir, ".box-drill-kept-"+nonce)
	if err := os.Mkdir(dir, 0o755); err != nil {
		r.Status, r.Observed = Error, "fixture: "+err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	r.Targets = []string{filepath.Join(dir, "sub", ".git", "config")}
	code, rep, stderr, err := b.ownRun(p, filepath.Join(scratch, "data"), "sh", "-c", keptRepoScript, "kept-repo", dir, marker)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d", code)
	}
	if err != nil || rep == nil {
		r.Status, r.Observed = Error, fmt.Sprintf("the probe run: %v %s", err, stderr)
		return r
	}
	gitDir := filepath.Join(dir, "sub", ".git")
	var kept, action string
	for _, f := range rep.Findings {
		if f.Kind == postrun.FindRepo && f.Path == gitDir && len(f.Kept) > 0 {
			kept, action = f.Kept[0], f.Action
		}
	}
	if kept == "" {
		r.Status, r.Observed = Error, "the audit kept no copy of the repository the run made: "+stderr
		return r
	}
	// As the operator reads it: in the kept directory, and naming it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = hostRun(ctx, kept, "git", "st") // protect.go
	_ = hostRun(ctx, scratch, "git", "--git-dir="+kept, "st")
	if _, err := os.Lstat(marker); err == nil {
		r.Status, r.Observed = Breach, "the host's git in the quarantine's copy "+kept+" ran the alias the sandbox wrote in its config"
		return r
	}
	r.Status, r.Observed = Pass, "the host's git in the quarantine's copy ran nothing: the audit "+action
	return r
}

// ownRun runs argv through the session box run uses, as a row's run of its own: quiet,
// without asking, in the data directory dataHome (its quarantine and kept listings),
// with the drilled plan's template, isolation and pids limit at tier none. stderr is
// what box and the command said there, trimmed.
func (b *Bwrap) ownRun(p *bwrap.Plan, dataHome string, argv ...string) (code int, rep *postrun.Report, stderr string, err error) {
	code, rep, _, stderr, err = b.ownRunIn(p, dataHome, ownRunOpts{Isolation: string(p.Isolation.Mode)}, argv...)
	return code, rep, stderr, err
}

// ownRunOpts are what a row's run of its own may choose: the working directory ("": the
// drilled one) and the isolation mode.
type ownRunOpts struct {
	Tree, Isolation string
}

// ownRunIn is ownRun as o says, giving what the command printed on stdout too.
func (b *Bwrap) ownRunIn(p *bwrap.Plan, dataHome string, o ownRunOpts, argv ...string) (code int, rep *postrun.Report, stdout, stderr string, err error) {
	prof := profiles.Profile{Name: "box-drill-own", Network: policy.NetNone, Template: p.Template.Name, Source: "the drill", Pids: p.Profile.Pids}
	sess := *b.Session
	var out, errb bytes.Buffer
	sess.Outside.DataHome, sess.Yes, sess.DryRun, sess.Quiet = dataHome, true, false, true
	sess.Stdin, sess.Stdout, sess.Stderr, sess.AuditOut, sess.StdinTTY = bytes.NewReader(nil), &out, &errb, &errb, nil
	rp, err := sess.Resolve(bwrap.Request{Profile: &prof, Template: p.Template, Network: string(policy.NetNone),
		Isolation: o.Isolation, Tree: o.Tree, Command: argv})
	var pr bwrap.Prepared
	if err == nil {
		pr, err = sess.Prepare(rp)
	}
	if err == nil {
		code, rep, err = sess.Supervise(rp, pr)
	}
	return code, rep, out.String(), strings.TrimSpace(errb.String()), err
}
