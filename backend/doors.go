package backend

// Doors is one backend's box expose on one box, its ports read as that backend words
// them.
type Doors struct {
	Port      func(what, s string) (int, error)
	Expose    func(port, hostPort int) error
	Unexpose  func(port int) error
	Exposures func() ([]Exposure, error)
}

// ExposeRequest is box expose: open Ports (PORT, or PORT and HOSTPORT), close Remove,
// or List the doors.
type ExposeRequest struct {
	Ports  []string
	Remove string
	List   bool
}

// Run reads the ports (all before any change), then opens, closes or lists; the doors
// come back for List only.
func (d Doors) Run(r ExposeRequest) ([]Exposure, error) {
	switch {
	case r.Remove != "":
		p, err := d.Port("--remove", r.Remove)
		if err != nil {
			return nil, err
		}
		return nil, d.Unexpose(p)
	case !r.List:
		p, err := d.Port("port", r.Ports[0])
		if err != nil {
			return nil, err
		}
		hp := p
		if len(r.Ports) == 2 {
			if hp, err = d.Port("host port", r.Ports[1]); err != nil {
				return nil, err
			}
		}
		return nil, d.Expose(p, hp)
	}
	return d.Exposures()
}
