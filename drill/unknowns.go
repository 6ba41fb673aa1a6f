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
	"slices"
	"strings"
	"syscall"
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

// rwMountProbe is the row for a profile's read-write mount outside the working
// directory (hostile review, session 16): the sandbox writes it as it writes the working
// directory, and the post-run audit walked only the latter. Inside, a repository whose
// core.fsmonitor writes a marker is planted at the mount's top; outside, after the
// audit, the host's git status runs in it (KindHostExec's settle).
func rwMountProbe(in Input, name string) Probe {
	p := Probe{ID: "host-exec:rw-mount-repo", Group: "host-exec", Name: "repo planted in a read-write mount outside the working directory, host git status",
		Kind: KindHostExec, Want: Blocked, Expected: "nothing runs on the host"}
	switch {
	case len(in.RWMounts) == 0:
		p.Skip = "the profile mounts no directory read-write (at its own path) outside the working directory"
	case in.Facts.Git == "":
		p.Skip = "git not installed on the host"
	default:
		m := in.RWMounts[0]
		p.Targets = []string{filepath.Join(m, name+"-mount-repo"), filepath.Join(m, name+"-mount-ran")}
	}
	return p
}

// KindWorktreeGitdir: a linked worktree's gitdir pointer planted in the working
// directory's common git directory, naming a directory outside the sandbox.
const KindWorktreeGitdir Kind = "host-exec-worktree-gitdir"

// worktreeGitdirProbe is the row for the working directory's repository: inside, a
// worktrees/NAME whose gitdir names a directory beside the working directory; outside,
// after the audit, whether the operator's git lists that directory as a worktree (its
// git worktree repair would then write a .git file there: the directory a work tree of
// the sandbox's repository). Where the
// working directory is a linked worktree, the common git directory lies outside the
// tree the audit walks (field test, session 10).
func worktreeGitdirProbe(in Input, name string) Probe {
	p := Probe{ID: "host-exec:worktree-gitdir", Group: "host-exec", Name: "worktrees/NAME/gitdir naming a directory outside, host git worktree repair",
		Kind: KindWorktreeGitdir, Want: Blocked, Expected: "no worktree outside for the host's git",
		Targets: []string{filepath.Join(in.Facts.GitCommon, "worktrees", name), filepath.Join(filepath.Dir(in.Workdir), name+"-victim"), in.Workdir}}
	switch {
	case in.Facts.Git == "":
		p.Skip = "git not installed on the host"
	case in.Facts.GitCommon == "":
		p.Skip = "the working directory is not a repository's top"
	}
	return p
}

// probeWorktreeGitdir (inside) makes worktrees/NAME in the common git directory, a
// linked worktree's git directory whose gitdir names targets[1]/.git. A write refused
// is the sandbox held (not seen); any other failure is an error.
func probeWorktreeGitdir(targets []string) (bool, string, error) {
	if len(targets) != 3 {
		return false, "", errors.New("worktree-gitdir probe without its three targets")
	}
	d := targets[0]
	if err := os.Mkdir(d, 0o755); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrNotExist) {
			return false, "not planted (" + errName(err) + ")", nil
		}
		return false, "", err
	}
	for n, c := range map[string]string{"HEAD": "ref: refs/heads/main\n", "commondir": "../..\n", "gitdir": filepath.Join(targets[1], ".git") + "\n"} {
		if err := os.WriteFile(filepath.Join(d, n), []byte(c), 0o644); err != nil {
			return false, "", err
		}
	}
	return true, "planted " + d, nil
}

// settleWorktreeGitdir (outside) asks the operator's git in the working directory which
// worktrees it knows: the victim listed is the pointer obeyed, and git worktree repair
// would write victim/.git (the drill never runs repair: it rewrites every worktree's
// links in your repository). Then it removes the plant.
func settleWorktreeGitdir(pr Probe, o Observation) Observation {
	plant, victim, wd := pr.Targets[0], pr.Targets[1], pr.Targets[2]
	defer os.RemoveAll(plant)
	for _, p := range pr.Targets[3:] { // the worktree-link row's directory the link names
		defer os.RemoveAll(p)
	}
	if !o.Seen || o.Err != "" {
		return o
	}
	cmd := exec.Command("git", "-c", "safe.directory=*", "worktree", "list", "--porcelain")
	cmd.Dir = wd
	out, err := cmd.Output()
	switch {
	case err != nil:
		o.Err = "git worktree list: " + err.Error()
	case slices.Contains(strings.Split(string(out), "\n"), "worktree "+victim):
		o.OnHost = true
		o.Detail += "; the host's git lists " + victim + " as a worktree: git worktree repair would write its .git"
	default:
		o.Detail += "; the host's git lists no worktree outside"
	}
	return o
}

// KindWorktreeLink: the worktree-gitdir plant behind a link: worktrees/NAME a link to a
// directory of the working directory holding the gitdir file.
const KindWorktreeLink Kind = "host-exec-worktree-link"

// worktreeLinkProbe is the row for a linked worktree's git directory that is a link
// (hostile review, session 15): git follows it, and the audit listed only directories in
// worktrees/. Targets: the link, the victim beside the working directory, the working
// directory, and the directory the link names (in the working directory).
func worktreeLinkProbe(in Input, name string) Probe {
	p := worktreeGitdirProbe(in, name)
	p.ID, p.Kind = "host-exec:worktree-link", KindWorktreeLink
	p.Name = "worktrees/NAME a link to a directory whose gitdir names a directory outside, host git worktree repair"
	p.Targets = []string{filepath.Join(in.Facts.GitCommon, "worktrees", name+"-link"), filepath.Join(filepath.Dir(in.Workdir), name+"-link-victim"),
		in.Workdir, filepath.Join(in.Workdir, name+"-link-stash")}
	return p
}

// probeWorktreeLink (inside) writes the gitdir file (naming targets[1]/.git) into
// targets[3] and links worktrees/NAME (targets[0]) to it, as an attacker would. A write
// refused is the sandbox held (not seen); any other failure is an error.
func probeWorktreeLink(targets []string) (bool, string, error) {
	if len(targets) != 4 {
		return false, "", errors.New("worktree-link probe without its four targets")
	}
	if err := os.Mkdir(targets[3], 0o755); err != nil {
		return false, "", err
	}
	if err := os.WriteFile(filepath.Join(targets[3], "gitdir"), []byte(filepath.Join(targets[1], ".git")+"\n"), 0o644); err != nil {
		return false, "", err
	}
	os.Mkdir(filepath.Dir(targets[0]), 0o755) // worktrees/, when there is none yet
	if err := os.Symlink(targets[3], targets[0]); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrNotExist) {
			return false, "not planted (" + errName(err) + ")", nil
		}
		return false, "", err
	}
	return true, "planted " + targets[0] + " -> " + targets[3], nil
}

// GitCommon is the common git directory of the repository whose top is wd ("" when wd
// has no .git): the .git directory itself, or for a linked worktree or submodule the
// directory its pointer and commondir lead to. It only reads.
func GitCommon(wd string) string {
	dot := filepath.Join(wd, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return ""
	}
	gd := dot
	if fi.Mode().IsRegular() {
		b, err := os.ReadFile(dot)
		if err != nil {
			return ""
		}
		p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return ""
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		gd = p
	} else if !fi.IsDir() {
		return ""
	}
	if b, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gd, c)
		}
		gd = c
	}
	if r, err := filepath.EvalSymlinks(gd); err == nil {
		gd = r
	}
	return filepath.Clean(gd)
}

// KindMainRebase: a stopped interactive rebase planted in the working directory's common
// git directory, its todo list an exec line.
const KindMainRebase Kind = "host-exec-main-rebase"

// mainRebaseProbe is the row for the main worktree's rebase state: inside,
// rebase-merge/ in the common git directory (the main worktree's own, outside the working
// directory when it is a linked worktree) with an exec line as the next command; outside,
// after the audit, the operator's git status, which names that line as what git rebase
// --continue (which it tells you to run) runs next. Nothing is continued: the drill
// never rebases your repository.
func mainRebaseProbe(in Input, name string) Probe {
	p := Probe{ID: "host-exec:main-rebase-todo", Group: "host-exec", Name: "stopped rebase with an exec line in the common git directory, host git status",
		Kind: KindMainRebase, Want: Blocked, Expected: "no exec line for the host's git rebase --continue",
		Targets: []string{filepath.Join(in.Facts.GitCommon, "rebase-merge"), "exec echo " + name, in.Workdir}}
	switch {
	case in.Facts.Git == "":
		p.Skip = "git not installed on the host"
	case in.Facts.GitCommon == "":
		p.Skip = "the working directory is not a repository's top"
	}
	return p
}

// probeMainRebase (inside) makes rebase-merge/ with an interactive rebase's todo list. A
// rebase of the operator's in progress there is left alone (an error: nothing proven).
func probeMainRebase(targets []string) (bool, string, error) {
	if len(targets) != 3 {
		return false, "", errors.New("main-rebase probe without its three targets")
	}
	d := targets[0]
	if err := os.Mkdir(d, 0o755); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrNotExist) {
			return false, "not planted (" + errName(err) + ")", nil
		}
		return false, "", err // EEXIST: a rebase in progress, not the drill's to touch
	}
	for n, c := range map[string]string{"interactive": "", "git-rebase-todo": targets[1] + "\n"} {
		if err := os.WriteFile(filepath.Join(d, n), []byte(c), 0o644); err != nil {
			return false, "", err
		}
	}
	return true, "planted " + d, nil
}

// settleMainRebase (outside) runs the operator's git status on the common git directory
// and looks for the planted exec line among the commands it says come next; then removes
// the plant.
func settleMainRebase(pr Probe, o Observation) Observation {
	d, line, wd := pr.Targets[0], pr.Targets[1], pr.Targets[2]
	if !o.Seen || o.Err != "" {
		return o
	}
	defer os.RemoveAll(d)
	cmd := exec.Command("git", "-c", "safe.directory=*", "--git-dir="+filepath.Dir(d), "status")
	cmd.Dir = wd
	out, _ := cmd.Output()
	if strings.Contains(string(out), line) {
		o.OnHost = true
		o.Detail += "; the host's git status names the planted exec line as the next command of git rebase --continue"
	} else {
		o.Detail += "; the host's git status shows no planted exec line"
	}
	return o
}
