package vm

import "github.com/heavy-duty/box/backend"

// Doors is box expose on the vm box name: Incus proxy devices.
func (b Backend) Doors(name string) backend.Doors {
	return backend.Doors{
		Port: func(what, s string) (int, error) {
			p, err := ParsePort(what, s)
			if err != nil {
				return 0, b.err(err)
			}
			return p, nil
		},
		Expose:   func(p, hp int) error { return b.Expose(name, p, hp) },
		Unexpose: func(p int) error { return b.Unexpose(name, p) },
		Exposures: func() ([]backend.Exposure, error) {
			exp, err := b.Exposures(name)
			out := make([]backend.Exposure, len(exp))
			for i, x := range exp {
				out[i] = backend.Exposure(x)
			}
			return out, err
		},
	}
}
