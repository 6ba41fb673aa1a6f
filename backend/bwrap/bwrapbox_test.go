package bwrap_test

// Persistent bwrap boxes for real: the built box binary, real bwrap, run as the
// unprivileged test user with a planted HOME full of secrets (world, internal/boxtest),
// and a real incusd (vmRig, internal/boxtest) for the verbs across both backends.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

// boxDir is where the world's bwrap box name lives.
func (w *world) boxDir(name string) string {
	return filepath.Join(w.home, ".local", "share", "box", "boxes", name)
}

// must runs box and requires exit 0.
func (w *world) must(args ...string) result {
	w.t.Helper()
	r := w.run(args...)
	if r.code != 0 {
		w.t.Fatalf("box %q: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// in runs a shell snippet in the bwrap box name.
func (w *world) in(name, script string) result {
	w.t.Helper()
	return w.run("exec", "-y", name, "--", "sh", "-c", script)
}

func TestBwrapBoxHomePersists(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "agent")
	// A tool under ~/.local, a login in the agent's state dir, a dotfile.
	r := w.in("agent", `mkdir -p ~/.local/bin && printf '#!/bin/sh\necho tool-ran\n' > ~/.local/bin/mytool && chmod +x ~/.local/bin/mytool &&
echo '{"LOGGED-IN-INSIDE":1}' > ~/.claude/.credentials.json && echo kept > ~/.profile-box && echo done`)
	if r.code != 0 || !strings.Contains(r.stdout, "done") {
		t.Fatalf("writing the box home: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Another launch: everything is still there.
	r = w.in("agent", `~/.local/bin/mytool; cat ~/.claude/.credentials.json ~/.profile-box; pwd`)
	for _, want := range []string{"tool-ran", "LOGGED-IN-INSIDE", "kept", w.proj} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("second exec lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	// None of it is in the real home: the login stays in the box, the host's own
	// ~/.claude/.credentials.json is untouched.
	for _, p := range []string{".local/bin/mytool", ".profile-box"} {
		if _, err := os.Lstat(filepath.Join(w.home, p)); err == nil {
			t.Errorf("~/%s reached the real home", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(w.home, ".claude/.credentials.json")); string(b) != secrets[".claude/.credentials.json"] {
		t.Errorf("the host's credentials changed: %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(w.boxDir("agent"), "state/instance/.claude/.credentials.json")); err != nil || !strings.Contains(string(b), "LOGGED-IN-INSIDE") {
		t.Errorf("the login is not in the box dir: %q %v", b, err)
	}
	// The box is never weaker than box run: no host secret, no host variable inside.
	r = w.in("agent", `for f in ~/.ssh/id_ed25519 ~/.aws/credentials `+w.home+`/.ssh/id_ed25519; do cat "$f" 2>/dev/null; done; env; grep -rIl PLANTED / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr 2>/dev/null; echo end`)
	for _, leak := range []string{"PLANTED", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "SSH_AUTH_SOCK", "GITHUB_TOKEN"} {
		if strings.Contains(r.stdout, leak) {
			t.Errorf("%s visible in the box:\n%s", leak, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "HOME="+w.home) || !strings.Contains(r.stdout, "end") {
		t.Errorf("box env/probe output:\n%s\n%s", r.stdout, r.stderr)
	}
	// exec passes the exit code on; the audit prints as for box run.
	if r := w.in("agent", "exit 9"); r.code != 9 || !strings.Contains(r.stderr, "environment variables enter the sandbox") {
		t.Errorf("exit 9: got %d, stderr %q", r.code, r.stderr)
	}
	// Without a terminal and without -y, box refuses and runs nothing.
	if r := w.run("exec", "agent", "--", "touch", "ran"); r.code != 125 || !strings.Contains(r.stderr, "-y") {
		t.Errorf("exec without -y: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "ran")); err == nil {
		t.Error("the command ran without confirmation")
	}
}

func TestBwrapBoxSnapshotCloneRestore(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "base")
	w.in("base", `echo v1 > ~/state`)
	w.must("snapshot", "base", "authed")
	w.in("base", `echo v2 > ~/state`)
	w.must("new", "--name", "feature", "--from", "base/authed")
	w.must("new", "--name", "twin", "--from", "base")
	for name, want := range map[string]string{"feature": "v1", "twin": "v2", "base": "v2"} {
		if r := w.in(name, `cat ~/state`); strings.TrimSpace(r.stdout) != want {
			t.Errorf("%s has %q, want %s (%s)", name, r.stdout, want, r.stderr)
		}
	}
	// A clone is a box of its own: changing it leaves its source alone.
	w.in("feature", `echo changed > ~/state`)
	if r := w.in("base", `cat ~/state`); strings.TrimSpace(r.stdout) != "v2" {
		t.Errorf("the source changed with its clone: %q", r.stdout)
	}
	// restore asks: without a terminal and without --force it refuses and changes nothing.
	if r := w.run("restore", "base", "authed"); r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("restore without --force: %d %q", r.code, r.stderr)
	}
	if r := w.in("base", `cat ~/state`); strings.TrimSpace(r.stdout) != "v2" {
		t.Errorf("a refused restore changed the box: %q", r.stdout)
	}
	w.must("restore", "base", "authed", "--force")
	if r := w.in("base", `cat ~/state`); strings.TrimSpace(r.stdout) != "v1" {
		t.Errorf("restored box has %q", r.stdout)
	}
	// info and list --json show the backend, the stamp and the snapshots.
	var info infoJSON
	if err := json.Unmarshal([]byte(w.must("info", "base", "--json").stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.Backend != "bwrap" || info.Workdir != w.proj || info.Network != "none" || len(info.Snapshots) != 1 || info.Snapshots[0].Name != "authed" {
		t.Errorf("info = %+v", info)
	}
	var list []boxJSON
	json.Unmarshal([]byte(w.must("list", "--json").stdout), &list)
	var names []string
	for _, b := range list {
		names = append(names, b.Name+":"+b.Backend+":"+b.Origin+":"+b.OriginFrom)
	}
	if strings.Join(names, " ") != "base:bwrap:mint: feature:bwrap:clone:base/authed twin:bwrap:clone:base" {
		t.Errorf("list = %v", names)
	}
}

// rm removes the box it made and nothing else: not what a link in the box points at.
func TestBwrapBoxRmOnlyWhatItMade(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "gone")
	// From inside, plant links toward the real home (invisible inside, but a careless
	// rm -r on the host would follow them) and a directory the sandbox locked.
	w.in("gone", `ln -s `+w.home+`/.ssh ~/ssh-link; ln -s `+w.home+` ~/home-link; mkdir -p ~/locked/sub && chmod 0 ~/locked; echo ok`)
	if r := w.run("rm", "gone"); r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("rm without --force: %d %q", r.code, r.stderr)
	}
	w.must("rm", "gone", "--force")
	if _, err := os.Lstat(w.boxDir("gone")); !os.IsNotExist(err) {
		t.Errorf("box dir still there: %v", err)
	}
	for rel, content := range secrets {
		if b, err := os.ReadFile(filepath.Join(w.home, rel)); err != nil || string(b) != content {
			t.Errorf("rm touched ~/%s: %v", rel, err)
		}
	}
	if _, err := os.Stat(filepath.Join(w.proj, "README")); err != nil {
		t.Errorf("rm touched the working directory: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(w.boxDir("gone"))); len(ents) != 0 {
		t.Errorf("rm left %v in the store", ents)
	}
}

// A directory that merely looks like a box (no stamp, or not box's stamp) is refused by
// every verb, and nothing in it is touched.
func TestBwrapBoxLookalikeRefused(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "real")
	stamp, err := os.ReadFile(filepath.Join(w.boxDir("real"), "box.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]string{
		"fake":  "",
		"forge": strings.Replace(string(stamp), `"box/bwrap-box/1"`, `"box/bwrap-box/2"`, 1),
		"moved": string(stamp), // a real stamp, but another box's
	} {
		dir := w.boxDir(name)
		for _, d := range []string{"state/home", "state/instance", "snapshots/s"} {
			os.MkdirAll(filepath.Join(dir, d), 0o700)
		}
		w.write(filepath.Join(dir, "state/home/precious"), "mine")
		if st != "" {
			w.write(filepath.Join(dir, "box.json"), st)
		}
		filepath.Walk(filepath.Dir(dir), func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, w.uid, w.gid) })
		for _, args := range [][]string{
			{"info", name}, {"info", name, "--json"}, {"exec", "-y", name, "--", "true"}, {"shell", name},
			{"snapshot", name, "x"}, {"restore", name, "s", "--force"}, {"rename", name, "other"},
			{"start", name}, {"stop", name}, {"rm", name, "--force"}, {"incus", name, "--", "info", "{}"},
			{"new", "--name", "copy", "--from", name}, {"new", "--name", name, "--backend", "bwrap"},
			{"new", "--name", name, "--backend", "vm", "--container"},
		} {
			r := w.run(args...)
			if r.code == 0 || !strings.Contains(r.stderr, "box: error: ") ||
				!(strings.Contains(r.stderr, "is not a bwrap box") || strings.Contains(r.stderr, "already exists")) {
				t.Errorf("box %q on a lookalike: exit %d\n%s", args, r.code, r.stderr)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "state/home/precious")); err != nil || string(b) != "mine" {
			t.Errorf("%s was touched: %q %v", name, b, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "other")); err == nil {
			t.Errorf("%s was renamed", name)
		}
	}
	// list shows the box, and not the lookalikes.
	var list []boxJSON
	json.Unmarshal([]byte(w.must("list", "--json").stdout), &list)
	if len(list) != 1 || list[0].Name != "real" {
		t.Errorf("list = %+v", list)
	}
}

// A link the sandbox plants on a path where box later mounts (here: the working
// directory of a clone bound elsewhere, pointed through bwrap's /oldroot at the real
// ~/.ssh) is removed before bwrap sees it, and nothing is made where it pointed.
// Measured with PrepareHome off: bwrap 0.8 refuses the bind ("Unable to mount source on
// destination"), so the box could no longer launch in that directory; a bwrap that
// followed the link would make the mount point on the host.
func TestBwrapBoxPlantedMountLink(t *testing.T) {
	w := newWorld(t)
	other := filepath.Join(w.home, "src", "other")
	w.write(filepath.Join(other, "README"), "other project\n")
	w.must("new", "--backend", "bwrap", "--name", "planter")
	target := filepath.Join(w.home, ".ssh", "made-by-bwrap")
	// ~/src exists in the box (the working directory's mount point lives under it);
	// ~/src/other does not: the sandbox plants it as a link to the real ~/.ssh/...
	r := w.in("planter", `ln -s /oldroot`+target+` ~/src/other && echo planted`)
	if !strings.Contains(r.stdout, "planted") {
		t.Fatalf("could not plant: %q %q", r.stdout, r.stderr)
	}
	w.must("new", "--name", "elsewhere", "--from", "planter", "--workdir", other)
	r = w.in("elsewhere", `cat README`)
	if strings.TrimSpace(r.stdout) != "other project" || !strings.Contains(r.stderr, "removed the symbolic link ~/src/other") {
		t.Errorf("clone bound to %s: %q\n%s", other, r.stdout, r.stderr[max(0, len(r.stderr)-600):])
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("bwrap made %s on the host through the planted link", target)
	}
}

// Both backends in one lab: box new --backend vm and --backend bwrap, list --json shows
// both, a name is unique across them, and the vm profile key decisions hold live.
func TestBwrapBoxBesideVM(t *testing.T) {
	r := newVMRig(t)
	proj := filepath.Join(r.home, "proj")
	os.MkdirAll(proj, 0o755)
	r.writeFile(filepath.Join(r.home, ".config", "box", "profiles", "offline.toml"), "backend = \"vm\"\ntemplate = \"blank\"\nnetwork = \"none\"\n")
	r.writeFile(filepath.Join(r.home, ".config", "box", "profiles", "mounty.toml"), "backend = \"vm\"\ntemplate = \"blank\"\n[[mounts]]\npath = \"/srv\"\n")
	r.writeFile(filepath.Join(r.tmpls, "auto", "box.env"), labBoxEnv+"BOX_AUTOSTART=\"1\"\n")

	r.ok(t, "new", "--backend", "vm", "--name", "vmbox", "--container")
	r.ok(t, "new", "--backend", "bwrap", "--name", "bwbox", "--workdir", proj)
	res := r.ok(t, "list", "--json")
	var list []boxJSON
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range list {
		got[b.Name] = b.Backend
	}
	if got["vmbox"] != "vm" || got["bwbox"] != "bwrap" || len(got) != 2 {
		t.Errorf("list --json: %v", got)
	}
	if table := r.ok(t, "list").stdout; !strings.Contains(table, "BACKEND") || !strings.Contains(table, "bwbox") || !strings.Contains(table, "vmbox") {
		t.Errorf("list table:\n%s", table)
	}
	var info infoJSON
	json.Unmarshal([]byte(r.ok(t, "info", "vmbox", "--json").stdout), &info)
	if info.Backend != "vm" || info.Home != "" {
		t.Errorf("vm info: %+v", info)
	}
	// A name is unique across backends, whichever way round.
	r.fails(t, 1, []string{`an instance named "vmbox" already exists`}, "new", "--backend", "bwrap", "--name", "vmbox", "--workdir", proj)
	r.fails(t, 1, []string{`a bwrap box named "bwbox" already exists`}, "new", "--backend", "vm", "--name", "bwbox", "--container")
	r.fails(t, 1, []string{`an instance named "vmbox" already exists`}, "new", "--name", "vmbox", "--from", "bwbox", "--workdir", proj)
	r.ok(t, "rename", "bwbox", "bwbox2")
	r.fails(t, 1, []string{`an instance named "vmbox" already exists`}, "rename", "bwbox2", "vmbox")
	// The vm side's strict model, live: refused before anything is made.
	r.fails(t, 1, []string{`sets network, which the vm backend does not honour`}, "new", "--profile", "offline", "--name", "off", "--container")
	r.fails(t, 1, []string{`sets mounts, which the vm backend does not honour`}, "new", "--profile", "mounty", "--name", "mnt", "--container")
	r.fails(t, 2, []string{"a vm box cannot take --network"}, "new", "--backend", "vm", "--name", "n", "--network", "none", "--container")
	for _, n := range []string{"off", "mnt", "n"} {
		if r.exists(n) {
			t.Errorf("a refused box new made %s", n)
		}
	}
	// box incus refuses a bwrap box; rm of each goes to its own backend.
	r.fails(t, 2, []string{"box bwbox2 is a bwrap box: box incus is for vm boxes"}, "incus", "bwbox2", "--", "info", "{}")
	r.ok(t, "rm", "bwbox2", "--force")
	r.ok(t, "rm", "vmbox", "--force")
	if r.exists("vmbox") {
		t.Error("vmbox still in incusd")
	}
}

// box drill --box: the whole drill, inside a persistent box's own launch, in the lab. A
// clean box passes every probe at tiers none and internet; a box stamped with a profile
// that turns a protection off (mounting ~/.ssh) shows the breach: the drill sees through
// the box's launch path, so a box is proven never weaker than box run.
func TestBwrapBoxDrill(t *testing.T) {
	w, l := labWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/leaky.toml"), "[[mounts]]\npath = \"~/.ssh\"\n")
	boxDrill := func(name string, more ...string) drillRun {
		r := w.inLab(l, nil, append([]string{"drill", "--box", name, "--json", "--internet-url", "http://" + lab.InternetName + "/", "--lan", lab.LANHost.String() + ":80"}, more...)...)
		if err := json.Unmarshal([]byte(r.stdout), &r.list); err != nil {
			t.Fatalf("drill --box %s: exit %d: %v\n%s\n%s", name, r.code, err, r.stdout, r.stderr)
		}
		r.rows = map[string]drill.Result{}
		for _, x := range r.list {
			r.rows[x.ID] = x
		}
		return r
	}
	for _, tier := range []string{"none", "internet"} {
		name := "clean-" + tier
		if r := w.inLab(l, nil, "new", "--backend", "bwrap", "--name", name, "--network", tier); r.code != 0 {
			t.Fatalf("new %s: %d %s", name, r.code, r.stderr)
		}
		// Something of the box's own in its home, as a logged-in box has.
		w.inLab(l, nil, "exec", "-y", name, "--", "sh", "-c", "echo own > ~/.claude/.credentials.json")
		r := boxDrill(name)
		t.Logf("drill --box %s (exit %d):\n%s%s", name, r.code, r.table(), r.stderr)
		if r.code != 0 {
			t.Errorf("clean box %s: exit %d", name, r.code)
		}
		for _, x := range r.list {
			if x.Status != drill.Pass && x.Status != drill.Skip {
				t.Errorf("clean box %s: %s %s (%s)", name, x.ID, x.Status, x.Observed)
			}
		}
		r.want(t, "secret:ssh", drill.Pass)
		// The box's own login, at the path the host's would be: told apart by inode.
		if obs := r.rows["secret:claude-credentials"].Observed; !strings.Contains(obs, "only the box's own files") {
			t.Errorf("%s: claude-credentials observed %q", name, obs)
		}
	}
	if r := w.inLab(l, nil, "new", "--backend", "bwrap", "--name", "leaky", "--profile", "leaky"); r.code != 0 {
		t.Fatalf("new leaky: %d %s", r.code, r.stderr)
	}
	// The leaky box is judged on its secrets only: the clean boxes above drilled whole.
	r := boxDrill("leaky", "--group", "secrets")
	t.Logf("drill --box leaky (exit %d):\n%s", r.code, r.table())
	r.want(t, "secret:ssh", drill.Breach)
	if r.code != 1 {
		t.Errorf("leaky box: exit %d, want 1", r.code)
	}
	if r := w.inLab(l, nil, "drill", "--box", "leaky", "--network", "full"); r.code != 2 || !strings.Contains(r.stderr, "--box cannot be combined") {
		t.Errorf("drill --box --network: %d %s", r.code, r.stderr)
	}
}
