package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Arches are the architectures the filter is built for (Linux names).
var Arches = []string{"x86_64", "aarch64"}

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

const x32Bit = 0x40000000

// Filter is what a sandbox gets: the groups left in force for one architecture.
type Filter struct {
	Arch  string
	OptIn []string // groups turned off, sorted
}

// Native is the Linux name of the architecture box was built for (the one its syscall
// numbers are for), "" when the filter has no table for it.
func Native() string { return linuxArch(runtime.GOARCH) }

// New is the filter for this machine's architecture with optIn groups turned off. It
// refuses a group name that does not exist or may not be opted into.
func New(optIn []string) (Filter, error) {
	name := Native()
	if name == "" {
		return Filter{}, fmt.Errorf("seccomp: unsupported architecture %s", runtime.GOARCH)
	}
	return ForArch(name, optIn)
}

// ForArch is New for a named architecture (one of Arches).
func ForArch(archName string, optIn []string) (Filter, error) {
	if archName == "" {
		archName = runtime.GOARCH
	}
	if !slices.Contains(Arches, archName) {
		return Filter{}, fmt.Errorf("seccomp: architecture %q: box's filter is built for %s", archName, strings.Join(Arches, " and "))
	}
	if err := CheckOptIn(optIn); err != nil {
		return Filter{}, err
	}
	o := slices.Clone(optIn)
	slices.Sort(o)
	return Filter{Arch: archName, OptIn: slices.Compact(o)}, nil
}

// Describe is the filter in one line, for --dry-run and the launch warning.
func (f Filter) Describe() string {
	s := Name + " (" + f.Arch + ")"
	if len(f.OptIn) > 0 {
		s += ", opted out of: " + strings.Join(f.OptIn, ", ")
	}
	return s
}

// Instructions compiles the filter.
//
// Layout: a syscall of a foreign ABI (audit arch, and x32 numbers on x86_64) kills the
// process; then the refused syscalls of every group in force, one comparison each, then
// each argument rule as its own block that reloads the syscall number (testing an
// argument overwrites it); everything else is allowed.
func (f Filter) Instructions() ([]bpf.Instruction, error) {
	info, err := archNamed(f.Arch)
	if err != nil {
		return nil, err
	}
	kill := bpf.RetConstant{Val: retKillProcess}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: info.id, SkipTrue: 1},
		kill,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if info.name == "x86_64" {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1}, kill)
	}

	// Outright refusals, grouped by errno.
	byErrno := map[unix.Errno][]uint32{}
	var errnos []unix.Errno
	for _, g := range f.groups() {
		e := groupErrno(g)
		for _, name := range g.Refused {
			nr, ok := info.number(name)
			if !ok {
				continue // not on this architecture (iopl on aarch64)
			}
			if len(byErrno[e]) == 0 {
				errnos = append(errnos, e)
			}
			byErrno[e] = append(byErrno[e], uint32(nr))
		}
	}
	for _, e := range errnos {
		block, err := refuseBlock(byErrno[e], errnoAction(e))
		if err != nil {
			return nil, err
		}
		prog = append(prog, block...)
	}

	// Argument rules.
	for _, g := range f.groups() {
		for _, r := range g.Rules {
			nr, ok := info.number(r.Syscall)
			if !ok {
				continue
			}
			block, err := ruleBlock(uint32(nr), r.Tests, errnoAction(unix.EPERM))
			if err != nil {
				return nil, fmt.Errorf("group %s, %s: %w", g.Name, r.Syscall, err)
			}
			prog = append(prog, bpf.LoadAbsolute{Off: offNr, Size: 4})
			prog = append(prog, block...)
		}
	}
	return append(prog, bpf.RetConstant{Val: retAllow}), nil
}

// Bytes is the compiled filter as the kernel's struct sock_filter array, which bwrap
// reads from its --seccomp fd.
func (f Filter) Bytes() ([]byte, error) {
	ins, err := f.Instructions()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(ins)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		// Both architectures box builds for are little-endian.
		out = binary.LittleEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.LittleEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// Render is the compiled program as text, one instruction a line, with syscall names:
// the golden form.
func (f Filter) Render() (string, error) {
	ins, err := f.Instructions()
	if err != nil {
		return "", err
	}
	info, err := archNamed(f.Arch)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", f.Describe())
	for i, in := range ins {
		line := fmt.Sprint(in)
		if j, ok := in.(bpf.JumpIf); ok {
			if name, ok := info.nameOf(int(j.Val)); ok && i > 0 && loadsNr(ins, i) {
				line += "  # " + name
			}
		}
		fmt.Fprintf(&b, "%3d: %s\n", i, line)
	}
	return b.String(), nil
}

// loadsNr reports whether the accumulator holds the syscall number at instruction i:
// the nearest load before it reads offset 0.
func loadsNr(ins []bpf.Instruction, i int) bool {
	for k := i - 1; k >= 0; k-- {
		if l, ok := ins[k].(bpf.LoadAbsolute); ok {
			return l.Off == offNr
		}
	}
	return false
}

func (f Filter) groups() []Group {
	var out []Group
	for _, g := range Groups {
		if !slices.Contains(f.OptIn, g.Name) {
			out = append(out, g)
		}
	}
	return out
}

// groupErrno is what g's outright refusals return (EPERM when it names none).
func groupErrno(g Group) unix.Errno {
	if g.Errno == 0 {
		return unix.EPERM
	}
	return g.Errno
}

func errnoAction(e unix.Errno) uint32 { return retErrno | uint32(e) }

// refuseBlock: A holds the syscall number; any of nrs returns action, else fall through.
func refuseBlock(nrs []uint32, action uint32) ([]bpf.Instruction, error) {
	if len(nrs) == 0 {
		return nil, nil
	}
	var p asm
	hit, next := p.label(), p.label()
	jumpAnyOf(&p, nrs, hit, next)
	p.set(hit)
	p.ret(action)
	p.set(next)
	return p.assemble()
}

// ruleBlock: A holds the syscall number; when it is nr and every test holds, return
// action, else fall through (A is then clobbered: the caller reloads it).
func ruleBlock(nr uint32, tests []Test, action uint32) ([]bpf.Instruction, error) {
	var p asm
	hit, next := p.label(), p.label()
	p.jmpIfTrue(bpf.JumpNotEqual, nr, next)
	for ti, t := range tests {
		if t.Arg < 0 || t.Arg > 5 {
			return nil, fmt.Errorf("argument %d: want 0-5", t.Arg)
		}
		pass := hit // where a test that holds goes
		if ti < len(tests)-1 {
			pass = p.label()
		}
		if len(t.Values) == 0 {
			return nil, fmt.Errorf("%s with no values", t.Op)
		}
		p.ldLo(uint32(t.Arg))
		switch t.Op {
		case In:
			jumpAnyOf(&p, t.Values, pass, next)
		case NotIn:
			jumpAnyOf(&p, t.Values, next, pass)
		case AnyBit:
			if len(t.Values) != 1 {
				return nil, fmt.Errorf("%s takes one mask", t.Op)
			}
			p.jmpIf(bpf.JumpBitsSet, t.Values[0], pass, next)
		default:
			return nil, fmt.Errorf("unknown test %q", t.Op)
		}
		if pass != hit {
			p.set(pass)
		}
	}
	p.set(hit)
	p.ret(action)
	p.set(next)
	return p.assemble()
}

// jumpAnyOf jumps to eq when A is one of vs, else to none.
func jumpAnyOf(p *asm, vs []uint32, eq, none label) {
	for i, v := range vs {
		if i < len(vs)-1 {
			p.jmpIfTrue(bpf.JumpEqual, v, eq)
		} else {
			p.jmpIf(bpf.JumpEqual, v, eq, none)
		}
	}
}
