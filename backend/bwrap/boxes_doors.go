package bwrap

import (
	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
)

// Doors is box expose on the bwrap box name: the doors are kept with the box.
func (be Boxes) Doors(name string) backend.Doors {
	return backend.Doors{
		Port: func(what, s string) (int, error) {
			p, err := policy.ParsePort(s)
			if err != nil {
				return 0, errs.Usage("", "%w", &backend.PortArgError{Box: name, What: what, Err: err})
			}
			return int(p), nil
		},
		Expose: func(p, hp int) error {
			if err := be.Expose(name, uint16(p), uint16(hp)); err != nil {
				return err
			}
			be.note("%s: port %d is published at 127.0.0.1:%d by its sessions from the next one on (box shell %s, box exec %s)", name, p, hp, name, name)
			return nil
		},
		Unexpose:  func(p int) error { return be.Unexpose(name, uint16(p)) },
		Exposures: func() ([]backend.Exposure, error) { return be.Exposures(name) },
	}
}
