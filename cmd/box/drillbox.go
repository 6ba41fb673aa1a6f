package main

import (
	"github.com/heavy-duty/box/backend/bwrap"
)

// drillBox resolves box drill --box NAME: the persistent bwrap box's own launch
// (bwrap.Boxes.DrillPlan). A nil plan: no --box, drill box run's.
func drillBox(e *env, s *bwrap.Session, o *drillOptions, probe []string, binds []bwrap.Mount) (*bwrap.Plan, func(), error) {
	if o.box == "" {
		return nil, func() {}, nil
	}
	if o.profile != "" || o.template != "" || o.network != "" || len(o.env) > 0 || o.backend != "" || len(o.allow) > 0 {
		return nil, nil, usagef("drop them: a box's profile, template and tier are its stamp's", "--box cannot be combined with --profile, --template, --network, --env, --allow or --backend")
	}
	return e.bwrapBoxes().DrillPlan(s, o.box, probe, binds)
}
