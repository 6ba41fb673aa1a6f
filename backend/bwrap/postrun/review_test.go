package postrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// The escapes a hostile review found (session 4), each replayed as the sandbox would
// plant it, then the host's git run as the operator would: after the audit nothing runs.
// Each case fails without its fix (the marker appears).
func TestAuditReviewEscapes(t *testing.T) {
	testenv.RequireTool(t, "git")
	for _, c := range []struct {
		name  string
		plant string   // sh, in the work tree, during the "run"
		host  []string // sh, in the work tree, afterwards (the operator)
	}{
		{
			// commondir through a link and "..": git resolves the link first.
			name: "commondir-link-dotdot",
			plant: `mkdir -p .git/modules/s .git/deep/a/b .git/deep/evil/refs/heads .git/deep/evil/hooks s
cp -r .git/objects .git/deep/evil/; cp .git/refs/heads/main .git/deep/evil/refs/heads/
printf '[core]\n\tfsmonitor = "touch $M; false"\n' > .git/deep/evil/config
echo 'ref: refs/heads/main' > .git/modules/s/HEAD
ln -s ../../deep/a/b .git/modules/s/lnk
echo 'lnk/../../evil' > .git/modules/s/commondir
echo 'gitdir: ../.git/modules/s' > s/.git`,
			host: []string{"cd s && git status"},
		},
		{
			// A .git pointer through a link and "..".
			name: "pointer-link-dotdot",
			plant: `mkdir -p .git/hidden/a .git/modules s && git init -q --bare .git/hidden/real && git --git-dir=.git/hidden/real config core.bare false
git --git-dir=.git/hidden/real config core.fsmonitor "touch $M; false"
ln -s ../hidden/a .git/modules/L
echo 'gitdir: ../.git/modules/L/../real' > s/.git`,
			host: []string{"cd s && git status"},
		},
		{
			// HEAD and commondir make an existing directory a git directory.
			name: "head-commondir",
			plant: `mkdir -p .git/evil/refs/heads; cp -r .git/objects .git/evil/; cp .git/refs/heads/main .git/evil/refs/heads/
printf '[alias]\n\tst = "!touch $M"\n' > .git/evil/config
echo 'ref: refs/heads/main' > src/HEAD; echo ../.git/evil > src/commondir`,
			host: []string{"cd src && git st"},
		},
		{
			// A stopped rebase whose strategy is a program in the work tree.
			name: "rebase-strategy",
			plant: `GIT_SEQUENCE_EDITOR="sed -i -e 1s/^pick/drop/ -e 1ibreak" git rebase -q -i HEAD~2 >/dev/null 2>&1
mkdir git-merge-..; printf '#!/bin/sh\ntouch %s\nexit 1\n' "$M" > git-merge-../x; chmod +x git-merge-../x
echo ../x > .git/rebase-merge/strategy`,
			host: []string{"git rebase --continue"},
		},
		{
			// A stopped cherry-pick whose options name a strategy in the work tree.
			name: "sequencer-opts",
			plant: `git checkout -q -b side HEAD~2 && echo other > README && git commit -qam s1 && echo more >> README && git commit -qam s2 && git checkout -q main
git cherry-pick side~1 side >/dev/null 2>&1 || true
mkdir git-merge-..; printf '#!/bin/sh\ntouch %s\nexit 1\n' "$M" > git-merge-../x; chmod +x git-merge-../x
test -d .git/sequencer || { echo no-sequencer; exit 1; }
git checkout -q --theirs README && git add README
printf '[options]\n\tstrategy = ../x\n' >> .git/sequencer/opts`,
			host: []string{"git cherry-pick --continue; git cherry-pick --continue"},
		},
		{
			// git archive's compression command.
			name:  "tar-command",
			plant: `git config tar.tar.gz.command "sh -c 'touch $M; gzip -cn'"`,
			host:  []string{"git archive -o x.tar.gz HEAD"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var run func(script, flags string) string
			base := t.TempDir()
			wd, home := filepath.Join(base, "w"), filepath.Join(base, "home")
			marker := filepath.Join(base, "MARKER")
			os.MkdirAll(wd, 0o755)
			os.MkdirAll(home, 0o755)
			sh := func(script string) string {
				return run(script, "-ec")
			}
			run = func(script, flags string) string {
				cmd := exec.Command("sh", flags, script)
				cmd.Dir = wd
				cmd.Env = []string{"HOME=" + home, "PATH=" + filepath.Join(base, "bin") + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "M=" + marker,
					"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x", "GIT_EDITOR=true", "PAGER=cat"}
				out, err := cmd.CombinedOutput()
				if err != nil && flags == "-ec" {
					t.Fatalf("%s: %v\n%s", script, err, out)
				}
				return string(out)
			}
			sh(`git init -q -b main . && mkdir src && echo a > README && echo b > src/f && git add . && git commit -qm one
echo c >> README && git commit -qam two && echo d >> README && git commit -qam three`)
			in := Input{Workdir: wd, Home: home}
			before := Take(in)
			sh(c.plant)
			r := Audit(before, Take(in), filepath.Join(base, "q"), time.Now())
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if len(r.Findings) == 0 {
				t.Errorf("no finding")
			}
			for _, h := range c.host {
				run(h, "-c")
			}
			if _, err := os.Stat(marker); err == nil {
				var kinds []string
				for _, f := range r.Findings {
					kinds = append(kinds, f.Kind+" "+strings.TrimPrefix(f.Path, wd))
				}
				t.Errorf("the host's git ran the plant after the audit (findings %q)", kinds)
			}
		})
	}
}
