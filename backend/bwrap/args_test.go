package bwrap

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// debianHost is a merged-/usr Debian machine as DetectHost sees it.
var debianHost = Host{
	System: []SysPath{
		{Path: "/usr"}, {Path: "/bin", Link: "usr/bin"}, {Path: "/sbin", Link: "usr/sbin"},
		{Path: "/lib", Link: "usr/lib"}, {Path: "/lib64", Link: "usr/lib64"}, {Path: "/etc"},
	},
	ResolvTarget: "/run/systemd/resolve/stub-resolv.conf",
}

// nixosHost is a NixOS machine: /bin and /usr/bin hold a link or two into the store, /etc
// links into /etc/static, and /run/current-system names the system's store path.
var nixosHost = Host{
	System:   []SysPath{{Path: "/usr"}, {Path: "/bin"}, {Path: "/etc"}, {Path: "/nix/store"}},
	RunLinks: []SysPath{{Path: "/run/current-system", Link: "/nix/store/abc-nixos-system"}},
}

func baseSpec() Spec {
	f, err := seccomp.ForArch("x86_64", nil)
	if err != nil {
		panic(err)
	}
	return Spec{
		Workdir:     "/home/op/src/proj",
		Home:        "/home/op",
		InstanceDir: "/home/op/.local/share/box/instances/proj-0123456789abcdef",
		StateDir:    ".claude",
		Network:     NetNone,
		Command:     []string{"bash", "-l"},
		Tools:       []Tool{{Name: "bash", Path: "/usr/bin/bash"}},
		Hostname:    "box",
		InfoFD:      InfoFD,
		SeccompFD:   SeccompFD,
		Seccomp:     &f,
		BlockFD:     BlockFD,
		Limits:      Limits{Pids: DefaultPids, Memory: 8 << 30},
		Tmpfs:       TmpfsFor(8<<30, false),
	}
}

func TestArgsGolden(t *testing.T) {
	cases := map[string]func(*Spec){
		"none": func(s *Spec) {},
		"full": func(s *Spec) { s.Network = NetFull },
		"internet": func(s *Spec) {
			s.Network, s.ResolvConf = NetInternet, "/home/op/.local/share/box/run/resolv.conf"
		},
		// A linked worktree whose common directory lies outside, with a nested repository.
		"protected": func(s *Spec) {
			s.GitBinds = []string{"/home/op/src/main/.git"}
			s.Pins = []string{"/home/op/src/main/.git/worktrees", "/home/op/src/main/.git/worktrees/proj", "/home/op/src/proj/vendor",
				"/home/op/src/proj/vendor/lib", "/home/op/src/proj/vendor/lib/.git"}
			s.ReadOnly = []string{"/home/op/src/main/.git/commondir", "/home/op/src/main/.git/config", "/home/op/src/main/.git/hooks",
				"/home/op/src/main/.git/worktrees/proj/commondir", "/home/op/src/main/.git/worktrees/proj/gitdir",
				"/home/op/src/proj/.envrc", "/home/op/src/proj/.git", "/home/op/src/proj/vendor/lib/.git/config", "/home/op/src/proj/vendor/lib/.git/hooks"}
		},
		"nix-daemon": func(s *Spec) { s.NixDaemon = true },
		"nix-store": func(s *Spec) {
			s.NixStore, s.UID, s.GID = "/home/op/.local/share/box/instances/proj-0123456789abcdef/nix", 1000, 100
		},
		"mounts-tools-auth": func(s *Spec) {
			s.Mounts = []Mount{{Src: "/home/op/data", Dst: "/data"}, {Src: "/home/op/cache", Dst: "/home/op/cache", RW: true}}
			s.Tools = append(s.Tools, Tool{Name: "claude", Path: "/home/op/.local/share/claude/versions/2.0.1"}, Tool{Name: "node", Path: "/nix/store/abc-node/bin/node"})
			s.AuthFiles = []string{"/home/op/.claude/.credentials.json"}
			s.Command = []string{"claude", "--dangerously-skip-permissions"}
		},
		// A persistent bwrap box whose template runs another agent: the box's home in
		// place of the tmpfs, the agent's own state dir from the box's instance dir.
		"box-home-agent": func(s *Spec) {
			s.HomeDir = "/home/op/.local/share/box/boxes/work/state/home"
			s.InstanceDir = "/home/op/.local/share/box/boxes/work/state/instance"
			s.StateDir = ".aider"
			s.Tmpfs.Home = 0 // the home is on disk
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			s := baseSpec()
			mod(&s)
			host := debianHost
			if strings.HasPrefix(name, "nix-") {
				host = nixosHost
			}
			args, err := Args(s, host)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(args, "\n") + "\n"
			file := filepath.Join("testdata", "args-"+name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("argv differs from %s (go test -update rewrites it):\n--- got\n%s", file, got)
			}
		})
	}
}

// argsHas reports whether the option op with operands occurs in args.
func argsHas(args []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(args); i++ {
		ok := true
		for j := range seq {
			if args[i+j] != seq[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func index(args []string, seq ...string) int {
	for i := 0; i+len(seq) <= len(args); i++ {
		match := true
		for j := range seq {
			if args[i+j] != seq[j] {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

func TestArgsInvariants(t *testing.T) {
	s := baseSpec()
	args, err := Args(s, debianHost)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"--unshare-net"}, {"--unshare-user"}, {"--unshare-pid"}, {"--unshare-ipc"}, {"--unshare-uts"}, {"--unshare-cgroup"},
		{"--die-with-parent"}, {"--new-session"}, {"--cap-drop", "ALL"}, {"--disable-userns"},
		{"--tmpfs", "/home/op"}, {"--bind", s.Workdir, s.Workdir}, {"--chdir", s.Workdir},
		{"--ro-bind", "/etc", "/etc"}, {"--ro-bind", "/usr", "/usr"}, {"--proc", "/proc"}, {"--dev", "/dev"}, {"--tmpfs", "/tmp"},
	} {
		if !argsHas(args, want...) {
			t.Errorf("argv lacks %q", want)
		}
	}
	// The home tmpfs must come before every bind under it, or it would hide them.
	home := index(args, "--tmpfs", "/home/op")
	for _, later := range [][]string{{"--bind", s.Workdir, s.Workdir}, {"--bind", s.InstanceDir + "/.claude", "/home/op/.claude"}} {
		if i := index(args, later...); i < home {
			t.Errorf("%q at %d comes before the home tmpfs at %d", later, i, home)
		}
	}
	// The command follows "--" and nothing of the environment is on argv.
	if args[len(args)-3] != "--" || args[len(args)-2] != "bash" {
		t.Errorf("argv does not end with -- bash -l: %q", args[len(args)-3:])
	}
	for _, a := range args {
		if a == "--setenv" || a == "--unsetenv" {
			t.Errorf("env on argv: %q", a)
		}
	}
	s.Network = NetFull
	args, _ = Args(s, debianHost)
	if argsHas(args, "--unshare-net") {
		t.Error("tier full unshares the network")
	}
	if !argsHas(args, "--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve") {
		t.Error("tier full does not bind the resolver's directory")
	}
}

func TestArgsRefuses(t *testing.T) {
	for name, mod := range map[string]func(*Spec){
		"root workdir":       func(s *Spec) { s.Workdir = "/" },
		"home workdir":       func(s *Spec) { s.Workdir = s.Home },
		"home ancestor":      func(s *Spec) { s.Workdir = "/home" },
		"system workdir":     func(s *Spec) { s.Workdir = "/etc" },
		"relative workdir":   func(s *Spec) { s.Workdir = "proj" },
		"unclean workdir":    func(s *Spec) { s.Workdir = "/home/op/src/../src/proj" },
		"unknown network":    func(s *Spec) { s.Network = "lan" },
		"internet no fds":    func(s *Spec) { s.Network = NetInternet },
		"no command":         func(s *Spec) { s.Command = nil },
		"relative mount":     func(s *Spec) { s.Mounts = []Mount{{Src: "data", Dst: "/data"}} },
		"tool with slash":    func(s *Spec) { s.Tools = []Tool{{Name: "a/b", Path: "/usr/bin/a"}} },
		"tool path relative": func(s *Spec) { s.Tools = []Tool{{Name: "a", Path: "bin/a"}} },
	} {
		s := baseSpec()
		mod(&s)
		if _, err := Args(s, debianHost); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCovered(t *testing.T) {
	if !debianHost.Covered("/usr/bin/git") || debianHost.Covered("/usrx/bin/git") || debianHost.Covered("/bin/sh") {
		t.Error("Covered: /usr/bin/git must be covered; /usrx and the /bin symlink must not")
	}
}

func TestCheckHome(t *testing.T) {
	for home, refused := range map[string]bool{"/": true, "/usr": true, "/etc": true, "/nix": true, "/run": true, "/home/u": false, "/tmp/h": false, "/nonexistent": false, "/usr/local/h": false, "/root": false} {
		var he *HomeError
		if err := CheckHome(home); errors.As(err, &he) != refused {
			t.Errorf("CheckHome(%q) = %v, want refused %v", home, err, refused)
		}
	}
	var nh *NoHomeError
	if err := CheckHome(""); !errors.As(err, &nh) {
		t.Errorf("CheckHome(\"\") = %v, want the NoHomeError", err)
	}
}
