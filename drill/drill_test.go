package drill_test

// box drill, for real: the built binary as the unprivileged test user with a planted
// HOME, in the hermetic lab (drill/lab), for tiers none and internet; then every
// protection the drill checks is turned off on purpose, one at a time, and the drill must
// report the breach.

import (
	"encoding/json"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// The drill CI runs on every run: tiers none and internet in the lab, every row PASS or
// SKIP (with a reason), exit 0, and the JSON parses.
func TestDrillLab(t *testing.T) {
	w, l := labWorld(t)
	testenv.NixDaemon(t) // a multi-user Nix host: the nix rows are probed, not skipped
	for _, c := range []struct {
		tier string
		args []string
	}{
		{"none", []string{"--network", "none"}},
		{"internet", []string{"--network", "internet", "--internet-url", "http://" + lab.InternetName + "/"}},
	} {
		t.Run(c.tier, func(t *testing.T) {
			w.t = t
			args := append(c.args, "--lan", lab.LANHost.String()+":80")
			r := w.drill(l, args...)
			t.Logf("box drill %s (exit %d):\n%s%s", strings.Join(args, " "), r.code, r.table(), r.stderr)
			if r.code != 0 {
				t.Errorf("exit %d, want 0", r.code)
			}
			for _, x := range r.list {
				if x.Status != drill.Pass && x.Status != drill.Skip || x.Status == drill.Skip && x.Observed == "" {
					t.Errorf("%s: %s %q", x.ID, x.Status, x.Observed)
				}
			}
			// What the lab plants is really probed, not skipped.
			for _, id := range []string{"secret:ssh", "secret:aws", "secret:gnupg", "secret:gcloud", "secret:tailscale", "secret:age",
				"secret:netrc", "secret:git-credentials", "secret:docker", "secret:kube", "secret:gh", "secret:claude-credentials",
				"env:GITHUB_TOKEN", "env:AWS_SECRET_ACCESS_KEY", "env:ANTHROPIC_API_KEY", "env:unlisted",
				"pids", "priv:no-new-privs", "priv:caps", "priv:setuid", "priv:userns", "write:workdir", "write:/etc", "write:~/",
				"net:internet", "net:lan-gateway", "net:lan-hosts", "net:host", "net:metadata", "net:abstract", "net:sandbox-gateway",
				"limits:pids", "limits:memory", "limits:tmpfs:/tmp", "limits:tmpfs:/var/tmp", "limits:tmpfs:/dev/shm", "limits:tmpfs:" + w.home,
				"protect:hook", "protect:fsmonitor", "protect:hookspath", "protect:nested-config", "protect:worktree-pointer",
				"protect:envrc", "protect:vscode-task", "protect:agent-settings", "protect:rebase-exec", "protect:home-link",
				"protect:hook-link", "nix:daemon", "nix:store-write"} {
				r.want(t, id, drill.Pass)
			}
			if c.tier == "internet" && !strings.HasPrefix(r.rows["net:internet"].Observed, "HTTP 200") {
				t.Errorf("internet probe: %q", r.rows["net:internet"].Observed)
			}
			if !strings.Contains(strings.Join(r.rows["net:abstract"].Targets, " "), lab.HostAbstract) {
				t.Errorf("the lab's abstract socket is not among the probed: %q", r.rows["net:abstract"].Targets)
			}
			// The table form prints the same rows.
			tr := w.inLab(l, nil, append([]string{"drill", "--backend", "bwrap"}, args...)...)
			if tr.code != 0 || !strings.Contains(tr.stdout, "PROBE") || strings.Count(tr.stdout, "\n") != len(r.list)+1 {
				t.Errorf("table: exit %d:\n%s%s", tr.code, tr.stdout, tr.stderr)
			}
		})
	}
}

// Tier full judged against the internet contract: the LAN, the host and the metadata
// address are breaches; judged as full, they are WARN. The host's abstract sockets are
// unreachable either way (Landlock's scope), and a breach with the scope off.
func TestDrillBreachTierFull(t *testing.T) {
	if bwrap.LandlockABI() < 6 {
		testenv.Skip(t, "tier full's abstract-socket scope needs Landlock ABI 6 (Linux 6.12+)")
	}
	w, l := labWorld(t)
	args := []string{"--network", "full", "--internet-url", "http://" + lab.InternetName + "/", "--lan", lab.LANHost.String() + ":80"}
	// The drills that must show a breach or a failure drill only the network group, the
	// rows judged; the one that must pass (judged as full) drills whole.
	r := w.drill(l, append(args, "--expect", "internet", "--group", "network")...)
	t.Logf("tier full judged as internet (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	if r.code != 1 || !strings.Contains(r.stderr, "BREACH") {
		t.Errorf("exit %d, stderr %q; want 1 naming the breaches", r.code, r.stderr)
	}
	for _, id := range []string{"net:lan-gateway", "net:lan-hosts", "net:host", "net:metadata"} {
		r.want(t, id, drill.Breach)
	}
	r.want(t, "net:internet", drill.Pass)
	r.want(t, "net:abstract", drill.Pass)
	if !strings.Contains(strings.Join(r.rows["net:abstract"].Targets, " "), lab.HostAbstract) {
		t.Errorf("the lab's abstract socket is not among the probed: %q", r.rows["net:abstract"].Targets)
	}

	r = w.drill(l, args...)
	if r.code != 0 {
		t.Errorf("tier full judged as full: exit %d:\n%s%s", r.code, r.table(), r.stderr)
	}
	for _, id := range []string{"net:lan-gateway", "net:lan-hosts", "net:host", "net:metadata"} {
		r.want(t, id, drill.Warn)
	}
	r.want(t, "net:abstract", drill.Pass)

	// The scope off (a test build): the host's abstract socket answers, a breach.
	off := *w
	off.withProtectionOff(t, bwrap.ProtAbstract)
	r = off.drill(l, append(args, "--group", "network")...)
	r.want(t, "net:abstract", drill.Breach)
	// Both the lab host's socket and the drill's own (bound by box, outside) answer.
	if o := r.rows["net:abstract"].Observed; !strings.Contains(o, "@"+lab.HostAbstract) || !strings.Contains(o, "@box-drill-") {
		t.Errorf("abstract with the scope off: %q", o)
	}

	// Tier none judged as internet: the internet the contract promises is missing (FAIL).
	r = w.drill(l, "--network", "none", "--expect", "internet", "--internet-url", "http://"+lab.InternetName+"/", "--group", "network")
	r.want(t, "net:internet", drill.Fail)
	if r.code != 1 {
		t.Errorf("none judged as internet: exit %d", r.code)
	}
}

// Profiles that turn a protection off: each must show up as a breach (or, for an
// allowlisted secret variable, a warning).
func TestDrillBreachProfiles(t *testing.T) {
	w, l := labWorld(t)
	testenv.NixDaemon(t)
	// A listening socket standing for an ssh-agent, and one standing for docker.sock.
	agent := filepath.Join(w.home, "agent.sock")
	ln, err := net.Listen("unix", agent)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chown(agent, w.uid, w.gid)
	os.Chmod(agent, 0o600)
	w.env = append(w.env, "SSH_AUTH_SOCK="+agent)
	runDir := "/run/user/" + strconv.Itoa(w.uid)

	for _, c := range []struct {
		name, profile string
		args          []string
		want          map[string]drill.Status
		// groups: what a case that breaches drills, its rows' groups (its exit 1 needs
		// only them); a case that must pass drills whole ("") so that its exit 0 says
		// the profile breaches nothing else either.
		groups string
	}{
		{"mount-ssh", `[[mounts]]
path = "~/.ssh"
`, nil, map[string]drill.Status{"secret:ssh": drill.Breach}, "secrets"},
		// (A read-write mount of ~ itself is refused outright: it holds box's own config.)
		{"mount-home-ro", `[[mounts]]
path = "~/"
`, nil, map[string]drill.Status{"secret:ssh": drill.Breach, "secret:aws": drill.Breach, "secret:kube": drill.Breach}, "secrets"},
		{"mount-ssh-rw", `[[mounts]]
path = "~/.ssh"
mode = "rw"
`, nil, map[string]drill.Status{"secret:ssh": drill.Breach, "write:~/.ssh": drill.Breach}, "secrets,writes"},
		{"allowlist-env", `env = ["GITHUB_TOKEN", "AWS_*"]
`, nil, map[string]drill.Status{"env:GITHUB_TOKEN": drill.Warn, "env:AWS_SECRET_ACCESS_KEY": drill.Warn,
			"env:ANTHROPIC_API_KEY": drill.Pass, "env:unlisted": drill.Pass}, ""},
		{"env-flag", "", []string{"--env", "ANTHROPIC_API_KEY"}, map[string]drill.Status{"env:ANTHROPIC_API_KEY": drill.Warn}, ""},
		{"mount-agent-socket", `[[mounts]]
path = "~/agent.sock"
`, nil, map[string]drill.Status{"socket:ssh-agent": drill.Breach}, "sockets"},
		{"mount-docker-sock", `[[mounts]]
path = "~/agent.sock"
target = "/run/docker.sock"
`, nil, map[string]drill.Status{"socket:docker-sock": drill.Breach}, "sockets"},
		{"mount-run-user", `[[mounts]]
path = "~/.ssh"
target = "` + runDir + `"
`, nil, map[string]drill.Status{"socket:run-user": drill.Breach}, "sockets"},
		{"mount-gpg-agent", `[[mounts]]
path = "~/agent.sock"
target = "~/.gnupg/S.gpg-agent"
`, nil, map[string]drill.Status{"socket:gpg-agent": drill.Breach, "secret:gnupg": drill.Breach}, "sockets,secrets"},
		// The host's nix-daemon, mounted by hand and named in sockets: a session opens, a
		// breach. Mounted but not named, the unix-socket mediation refuses the connect
		// (a host socket the sandbox did not create). Opted in with nix = "daemon": a
		// warning.
		{"mount-nix-daemon", `sockets = ["/nix/var/nix/daemon-socket/socket"]
[[mounts]]
path = "/nix/var/nix/daemon-socket"
`, nil, map[string]drill.Status{"nix:daemon": drill.Breach, "nix:store-write": drill.Pass}, "nix"},
		{"mount-nix-daemon-unnamed", `[[mounts]]
path = "/nix/var/nix/daemon-socket"
`, nil, map[string]drill.Status{"nix:daemon": drill.Pass, "nix:store-write": drill.Pass}, ""},
		{"nix-daemon", `nix = "daemon"
`, nil, map[string]drill.Status{"nix:daemon": drill.Warn, "nix:store-write": drill.Pass}, ""},
		// A store of the project's own, layered by box's helper before bwrap: the host's
		// daemon stays hidden and writes to /nix/store stay in the project's store, with
		// the internet tier attached through the helper's user namespace.
		{"nix-store", `nix = "store"
`, []string{"--network", "internet", "--internet-url", "http://" + lab.InternetName + "/"},
			map[string]drill.Status{"nix:daemon": drill.Pass, "nix:store-write": drill.Pass, "net:internet": drill.Pass, "net:lan-gateway": drill.Pass}, ""},
		// Last: the credentials' mount point stays in the project's instance directory.
		{"auth-passthrough", `auth_passthrough = true
`, nil, map[string]drill.Status{"secret:claude-credentials": drill.Warn}, ""},
		// The protected set, one class at a time: dropped, the plant lands and the host's
		// own tool (git, direnv, VS Code, Claude Code) runs it.
		{"drop-hooks", `protect_drop = ["git:hooks"]
`, nil, map[string]drill.Status{"protect:hook": drill.Breach, "protect:drop:git:hooks": drill.Warn, "protect:fsmonitor": drill.Pass}, "protect"},
		{"drop-config", `protect_drop = ["git:config"]
`, nil, map[string]drill.Status{"protect:fsmonitor": drill.Breach, "protect:hookspath": drill.Breach, "protect:nested-config": drill.Pass,
			"protect:hook": drill.Pass, "protect:drop:git:config": drill.Warn}, "protect"},
		{"drop-nested", `protect_drop = ["git:nested"]
`, nil, map[string]drill.Status{"protect:nested-config": drill.Breach, "protect:fsmonitor": drill.Pass, "protect:drop:git:nested": drill.Warn}, "protect"},
		{"drop-pointer", `protect_drop = ["git:pointer"]
`, nil, map[string]drill.Status{"protect:worktree-pointer": drill.Breach, "protect:fsmonitor": drill.Pass}, "protect"},
		{"drop-envrc", `protect_drop = [".envrc"]
`, nil, map[string]drill.Status{"protect:envrc": drill.Breach, "protect:vscode-task": drill.Pass}, "protect"},
		{"drop-vscode", `protect_drop = [".vscode"]
`, nil, map[string]drill.Status{"protect:vscode-task": drill.Breach, "protect:envrc": drill.Pass}, "protect"},
		{"drop-agent-settings", `protect_drop = [".claude/settings.json"]
`, nil, map[string]drill.Status{"protect:agent-settings": drill.Breach, "protect:drop:.claude/settings.json": drill.Warn}, "protect"},
		{"drop-home-link", `protect_drop = ["home:link"]
`, nil, map[string]drill.Status{"protect:home-link": drill.Breach, "protect:drop:home:link": drill.Warn, "protect:envrc": drill.Pass}, "protect"},
		{"drop-hook-link", `protect_drop = ["git:hook-link"]
`, nil, map[string]drill.Status{"protect:hook-link": drill.Breach, "protect:drop:git:hook-link": drill.Warn, "protect:hook": drill.Pass}, "protect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w.t = t
			w.write(filepath.Join(w.home, ".config/box/profiles/"+c.name+".toml"), c.profile)
			breach := slices.Contains(slices.Collect(maps.Values(c.want)), drill.Breach)
			if breach != (c.groups != "") {
				t.Fatalf("groups %q: a case drills only its groups exactly when it breaches", c.groups)
			}
			args := append([]string{"--profile", c.name}, c.args...)
			if c.groups != "" {
				args = append(args, "--group", c.groups)
			}
			r := w.drill(l, args...)
			t.Logf("profile %s (exit %d):\n%s%s", c.name, r.code, r.table(), r.stderr)
			for id, s := range c.want {
				r.want(t, id, s)
			}
			if wantCode := map[bool]int{true: 1, false: 0}[breach]; r.code != wantCode {
				t.Errorf("exit %d, want %d", r.code, wantCode)
			}
		})
	}
	// The host's /proc, mounted: box refuses the profile (the host's processes'
	// environments would be readable); with that refusal off (a test build) the drill
	// reports the host's processes seen.
	t.Run("mount-host-proc", func(t *testing.T) {
		w.t = t
		w.write(filepath.Join(w.home, ".config/box/profiles/hostproc.toml"), "[[mounts]]\npath = \"/proc\"\n")
		r := w.inLab(l, nil, "drill", "--backend", "bwrap", "--json", "--profile", "hostproc")
		if r.code != 1 || !strings.Contains(r.stderr, "refusing a mount of /proc") {
			t.Errorf("the host's /proc was not refused: exit %d\n%s", r.code, r.stderr)
		}
		box, env := w.box, w.env
		defer func() { w.box, w.env = box, env }()
		w.withProtectionOff(t, "kernelmounts")
		d := w.drill(l, "--profile", "hostproc", "--group", "processes") // the row judged's group
		d.want(t, "pids", drill.Breach)
		if d.code != 1 {
			t.Errorf("exit %d, want 1", d.code)
		}
	})
}

// The probe runner outside any sandbox: every probe that no profile can turn off (pid
// namespace, no_new_privs, setuid, user namespaces, capabilities, the env scan, host
// abstract sockets, the network) must report the breach when the protection is simply
// not there.
func TestDrillRunnerWithoutSandbox(t *testing.T) {
	w, l := labWorld(t)
	testenv.NixDaemon(t)
	facts := drill.Facts{
		Exists:   map[string]bool{filepath.Join(w.home, ".ssh"): true, drill.NixDaemonSocket: true},
		Abstract: []string{lab.HostAbstract},
		Gateways: []netip.Addr{lab.RouterLAN}, Addrs: []netip.Addr{lab.HostPrivate, lab.HostPublic},
		Listening: []int{lab.HostPort}, Setuid: "/usr/bin/su", OuterCmdline: "box drill --not-this",
	}
	plan, err := drill.BuildPlan(drill.Input{Home: w.home, Workdir: w.proj, UID: w.uid, Tier: "none",
		Environ: w.env, Facts: facts, InternetURL: "http://" + lab.InternetName + "/",
		LANTargets: []string{lab.LANHost.String() + ":80"}, Nonce: "unsandboxed",
		// Limits the unsandboxed runner is not held to: the host's own /tmp and /dev/shm
		// take more than 16MiB, 200 forks and 128MiB of touched memory succeed.
		Limits: drill.Limits{Pids: 200, Memory: 64 << 20, Tmpfs: []drill.TmpfsBound{{Path: "/tmp", Size: 16 << 20}, {Path: "/dev/shm", Size: 16 << 20}}}})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(plan)
	r := w.inLab(l, in, drill.ProbeSubcommand)
	var obs []drill.Observation
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &obs) != nil {
		t.Fatalf("runner: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	res := drill.Judge(plan, drill.Settle(plan, obs))
	dr := drillRun{list: res, rows: map[string]drill.Result{}}
	for _, x := range res {
		dr.rows[x.ID] = x
	}
	t.Logf("unsandboxed runner:\n%s", dr.table())
	for _, id := range []string{"secret:ssh", "env:GITHUB_TOKEN", "env:unlisted", "pids", "priv:no-new-privs", "priv:setuid",
		"priv:userns", "write:~/", "net:internet", "net:lan-gateway", "net:lan-hosts", "net:host", "net:metadata", "net:abstract",
		"limits:pids", "limits:memory", "limits:tmpfs:/tmp", "limits:tmpfs:/dev/shm", "nix:daemon"} {
		dr.want(t, id, drill.Breach)
	}
	for _, f := range []string{"/tmp", "/dev/shm"} {
		if _, err := os.Stat(filepath.Join(f, ".box-drill-fill-unsandboxed")); err == nil {
			t.Errorf("the tmpfs probe left its file in %s", f)
		}
	}

	// As root, unsandboxed: capabilities held, and a write outside the working directory
	// (a private temp dir standing for a system directory) succeeds.
	dir := t.TempDir()
	p := drill.Plan{MaxProcs: 2, Probes: []drill.Probe{
		{ID: "caps", Kind: drill.KindCaps, Want: drill.Blocked},
		{ID: "write", Kind: drill.KindWrite, Want: drill.Blocked, Targets: []string{filepath.Join(dir, "x")}},
	}}
	res = drill.Judge(p, drill.Settle(p, drill.RunPlan(p)))
	for _, x := range res {
		if x.Status != drill.Breach {
			t.Errorf("as root: %s %s %q, want BREACH", x.ID, x.Status, x.Observed)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("Settle left the probe's file behind")
	}
}
