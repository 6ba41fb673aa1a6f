package seccomp

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The compiled program per architecture, instruction by instruction: a change to the
// groups shows up here for review.
func TestGolden(t *testing.T) {
	for _, a := range Arches {
		for _, c := range []struct {
			name  string
			optIn []string
		}{{"default", nil}, {"optin-ptrace-keyring", []string{"ptrace", "keyring"}}} {
			f, err := ForArch(a, c.optIn)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Render()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", a+"-"+c.name+".golden")
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s: compiled filter differs from %s (run with -update to accept):\n%s", a, golden, got)
			}
			if _, err := f.Bytes(); err != nil {
				t.Errorf("%s: %v", a, err)
			}
		}
	}
}

// Every syscall a group names exists on at least one architecture (a typo would be
// silently skipped otherwise), and the ones that are not on both are the known x86-only.
func TestNamesExist(t *testing.T) {
	x86only := map[string]bool{"iopl": true, "ioperm": true, "create_module": true, "query_module": true, "get_kernel_syms": true,
		"uselib": true, "ustat": true, "sysfs": true, "_sysctl": true}
	for _, g := range Groups {
		names := append([]string{}, g.Refused...)
		for _, r := range g.Rules {
			names = append(names, r.Syscall)
		}
		for _, n := range names {
			_, onX86 := arch.X86_64.SyscallNames[n]
			_, onArm := arch.AARCH64.SyscallNames[n]
			if !onX86 && !onArm {
				t.Errorf("group %s: %s exists on no architecture", g.Name, n)
			}
			if onX86 != onArm && !x86only[n] {
				t.Errorf("group %s: %s exists on x86_64 %v, aarch64 %v", g.Name, n, onX86, onArm)
			}
		}
		if g.Why == "" {
			t.Errorf("group %s says not why", g.Name)
		}
	}
}

// run interprets the program as the kernel would on a seccomp_data.
func run(t *testing.T, f Filter, nr uint32, args ...uint64) uint32 {
	t.Helper()
	ins, err := f.Instructions()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := arch.GetInfo(f.Arch)
	data := make([]byte, 64)
	le := func(off int, v uint32) {
		data[off], data[off+1], data[off+2], data[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	le(0, nr)
	le(4, uint32(info.ID))
	for i, a := range args {
		le(16+8*i, uint32(a))
		le(20+8*i, uint32(a>>32))
	}
	// x/net/bpf's VM loads big-endian; the kernel loads native (little) endian words.
	for i := 0; i < 64; i += 4 {
		data[i], data[i+1], data[i+2], data[i+3] = data[i+3], data[i+2], data[i+1], data[i]
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

const (
	allow  = 0x7fff0000
	eperm  = 0x00050001
	enosys = 0x00050026
)

// The rules' argument logic, through a BPF interpreter, on both architectures.
func TestVerdicts(t *testing.T) {
	for _, a := range Arches {
		f, _ := ForArch(a, nil)
		info, _ := arch.GetInfo(a)
		nr := func(n string) uint32 { return uint32(info.SyscallNames[n]) }
		for _, c := range []struct {
			what string
			nr   uint32
			args []uint64
			want uint32
		}{
			{"read", nr("read"), nil, allow},
			{"socket AF_UNIX", nr("socket"), []uint64{1, 1, 0}, allow},
			{"socket AF_INET6", nr("socket"), []uint64{10, 2, 0}, allow},
			{"socket AF_NETLINK ROUTE", nr("socket"), []uint64{16, 3, 0}, allow},
			{"socket AF_NETLINK SOCK_DIAG", nr("socket"), []uint64{16, 3, 4}, eperm},
			{"socket AF_VSOCK", nr("socket"), []uint64{40, 1, 0}, eperm},
			{"socket AF_PACKET", nr("socket"), []uint64{17, 3, 0}, eperm},
			{"socket AF_VSOCK, high bits set", nr("socket"), []uint64{1<<32 | 40, 1, 0}, eperm},
			{"socket AF_UNIX, high bits set", nr("socket"), []uint64{1<<32 | 1, 1, 0}, allow},
			{"socketpair AF_UNIX", nr("socketpair"), []uint64{1, 1, 0}, allow},
			{"socketpair AF_VSOCK", nr("socketpair"), []uint64{40, 1, 0}, eperm},
			{"socketpair AF_NETLINK", nr("socketpair"), []uint64{16, 3, 4}, eperm},
			{"ioctl TIOCSTI", nr("ioctl"), []uint64{0, 0x5412}, eperm},
			{"ioctl TIOCSTI, high bits set (CVE-2019-10063)", nr("ioctl"), []uint64{0, 1<<32 | 0x5412}, eperm},
			{"ioctl TIOCLINUX", nr("ioctl"), []uint64{0, 0x541c}, eperm},
			{"ioctl TCGETS", nr("ioctl"), []uint64{0, 0x5401}, allow},
			{"personality query", nr("personality"), []uint64{0xffffffff}, allow},
			{"personality PER_LINUX", nr("personality"), []uint64{0}, allow},
			{"personality READ_IMPLIES_EXEC", nr("personality"), []uint64{0x0400000}, eperm},
			{"personality ADDR_NO_RANDOMIZE", nr("personality"), []uint64{0x0040000}, eperm},
			{"clone thread", nr("clone"), []uint64{0x3d0f00}, allow},
			{"clone CLONE_NEWUSER", nr("clone"), []uint64{0x10000000 | 17}, eperm},
			{"clone CLONE_NEWNET", nr("clone"), []uint64{0x40000000}, eperm},
			{"clone3", nr("clone3"), nil, enosys},
			{"ptrace", nr("ptrace"), nil, eperm},
			{"keyctl", nr("keyctl"), nil, eperm},
			{"io_uring_setup", nr("io_uring_setup"), nil, eperm},
			{"mount", nr("mount"), nil, eperm},
			{"fsopen", nr("fsopen"), nil, eperm},
			{"unshare", nr("unshare"), nil, eperm},
			{"bpf", nr("bpf"), nil, eperm},
			{"execve", nr("execve"), nil, allow},
		} {
			if got := run(t, f, c.nr, c.args...); got != c.want {
				t.Errorf("%s: %s: %#x, want %#x", a, c.what, got, c.want)
			}
		}
		// Another ABI is killed, never judged with native numbers.
		ins, _ := f.Instructions()
		vm, _ := bpf.NewVM(ins)
		data := make([]byte, 64)
		data[4], data[5], data[6], data[7] = 0x40, 0, 0, 0x03 // AUDIT_ARCH_I386, byte-swapped as above
		if out, _ := vm.Run(data); uint32(out) != 0x80000000 {
			t.Errorf("%s: i386 syscall: %#x, want kill-process", a, out)
		}
	}
	// x32 numbers on x86_64.
	f, _ := ForArch("x86_64", nil)
	if got := run(t, f, 0x40000000|41, 40); got != 0x80000000 {
		t.Errorf("x32 socket: %#x, want kill-process", got)
	}
	// Opted-in groups are allowed; the rest still refused.
	f, _ = ForArch("x86_64", []string{"ptrace"})
	if run(t, f, uint32(arch.X86_64.SyscallNames["ptrace"])) != allow || run(t, f, uint32(arch.X86_64.SyscallNames["keyctl"])) != eperm {
		t.Error("opting into ptrace")
	}
}

func TestOptInRefused(t *testing.T) {
	var oe *OptInError
	for _, n := range []string{"mount", "nope", "sockets"} {
		if _, err := New([]string{n}); !errors.As(err, &oe) || !strings.Contains(oe.Hint(), "ptrace") {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := New([]string{"ptrace", "perf"}); err != nil {
		t.Error(err)
	}
}
