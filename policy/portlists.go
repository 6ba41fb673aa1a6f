package policy

// PortListError: one of a launch's published ports or host ports is malformed;
// Publish says which list (the CLI words it with its flag).
type PortListError struct {
	Publish bool
	Err     error
}

func (e *PortListError) Error() string { return e.Err.Error() }
func (e *PortListError) Unwrap() error { return e.Err }

// ParsePorts reads a launch's published ports (ParsePortMap) and the host ports it may
// reach (ParsePort), in order; the first malformed one is a *PortListError.
func ParsePorts(publish, hostPorts []string) ([]PortMap, []uint16, error) {
	var pub []PortMap
	for _, s := range publish {
		m, err := ParsePortMap(s)
		if err != nil {
			return nil, nil, &PortListError{Publish: true, Err: err}
		}
		pub = append(pub, m)
	}
	var hp []uint16
	for _, s := range hostPorts {
		n, err := ParsePort(s)
		if err != nil {
			return nil, nil, &PortListError{Err: err}
		}
		hp = append(hp, n)
	}
	return pub, hp, nil
}
