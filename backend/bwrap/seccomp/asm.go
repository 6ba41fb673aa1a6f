package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// asm assembles a classic BPF program with forward labels: the few operations the
// filter's blocks need, emitting what go-seccomp-bpf's assembler emits for them (the
// golden files hold the programs equal), without linking that library into box.
type asm struct {
	ins   []bpf.Instruction
	jumps []asmJump
	at    map[label]int
	next  label
}

type label int

type asmJump struct {
	idx         int
	onTrue, els label
}

// Seccomp return values (linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
)

func (p *asm) label() label {
	p.next++
	return p.next
}

// set places l at the next instruction.
func (p *asm) set(l label) {
	if p.at == nil {
		p.at = map[label]int{}
	}
	p.at[l] = len(p.ins)
}

func (p *asm) jmpIf(cond bpf.JumpTest, val uint32, onTrue, els label) {
	p.jumps = append(p.jumps, asmJump{len(p.ins), onTrue, els})
	p.ins = append(p.ins, bpf.JumpIf{Cond: cond, Val: val})
}

// jmpIfTrue jumps to onTrue when the test holds, else falls through.
func (p *asm) jmpIfTrue(cond bpf.JumpTest, val uint32, onTrue label) {
	next := p.label()
	p.jmpIf(cond, val, onTrue, next)
	p.set(next)
}

// ldLo loads the low 32 bits of argument arg (both architectures box builds for are
// little-endian).
func (p *asm) ldLo(arg uint32) {
	p.ins = append(p.ins, bpf.LoadAbsolute{Off: offArgs + 8*arg, Size: 4})
}

func (p *asm) ret(val uint32) { p.ins = append(p.ins, bpf.RetConstant{Val: val}) }

// assemble resolves the jumps. A jump backwards, to an unplaced label or further than a
// conditional jump reaches (255 instructions) is refused: the filter's blocks never need
// one, and a program box cannot build exactly is no program.
func (p *asm) assemble() ([]bpf.Instruction, error) {
	skip := func(from int, l label) (uint8, error) {
		to, ok := p.at[l]
		n := to - from - 1
		if !ok || n < 0 || n > 255 {
			return 0, fmt.Errorf("seccomp: a jump from instruction %d cannot reach its label", from)
		}
		return uint8(n), nil
	}
	for _, j := range p.jumps {
		in := p.ins[j.idx].(bpf.JumpIf)
		var err error
		if in.SkipTrue, err = skip(j.idx, j.onTrue); err != nil {
			return nil, err
		}
		if in.SkipFalse, err = skip(j.idx, j.els); err != nil {
			return nil, err
		}
		if in.SkipTrue == 0 && in.SkipFalse == 0 {
			return nil, fmt.Errorf("seccomp: a useless jump at instruction %d", j.idx)
		}
		p.ins[j.idx] = in
	}
	return p.ins, nil
}
