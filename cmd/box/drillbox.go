package main

import (
	"github.com/heavy-duty/box/backend/bwrap"
)

// drillBox resolves box drill --box NAME: the persistent bwrap box's own launch (the same
// plan box exec builds, holding the box's lock while the probes run), so the drill
// proves a box is never weaker than box run; binds are the drill's own. A nil plan: no
// --box, drill box run's.
func drillBox(e *env, s *bwrap.Session, o *drillOptions, probe []string, binds []bwrap.Mount) (*bwrap.Plan, func(), error) {
	if o.box == "" {
		return nil, func() {}, nil
	}
	if o.profile != "" || o.template != "" || o.network != "" || len(o.env) > 0 || o.backend != "" || len(o.allow) > 0 {
		return nil, nil, usagef("drop them: a box's profile, template and tier are its stamp's", "--box cannot be combined with --profile, --template, --network, --env, --allow or --backend")
	}
	be := e.bwrapBoxes()
	b, err := be.Lookup(o.box)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := b.Lock(false)
	if err != nil {
		return nil, nil, err
	}
	req, err := bwrap.BoxRequest(b, probe, false, nil)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	req.Binds = binds
	p, err := be.Plan(s, b, req)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return p, unlock, nil
}
