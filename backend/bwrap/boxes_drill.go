package bwrap

// DrillPlan is box drill --box NAME's plan: the persistent bwrap box's own launch (the
// same plan box exec builds, holding the box's session lock while the probes run), so the drill
// proves a box is never weaker than box run; binds are the drill's own. unlock releases
// the lock once the probes are done.
func (be Boxes) DrillPlan(s *Session, name string, probe []string, binds []Mount) (p *Plan, unlock func(), err error) {
	b, err := be.Lookup(name)
	if err != nil {
		return nil, nil, err
	}
	unlock, err = lockSession(b) // a session as box exec's: one at a time (boxes_launch.go)
	if err != nil {
		return nil, nil, err
	}
	req, err := BoxRequest(b, probe, false, nil)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	req.Binds = binds
	p, err = be.Plan(s, b, req)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return p, unlock, nil
}
