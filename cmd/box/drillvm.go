package main

import (
	"fmt"
	"time"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/templates"
)

// runDrillVM is box drill --backend vm (drill.VMDrill): the stack row by row, then two
// boxes probed live.
func runDrillVM(e *env, o *drillOptions) error {
	ctx, cancel := vm.SignalContext() // Ctrl-C and SIGTERM cancel it
	defer cancel()
	g := grantHost(e) // the admin client (vm.Daemon.Admin), and the grants the drill probes
	defer g.Client.Close()
	d := drill.VMDrill{Grants: g, Environ: e.environ(), UnitDir: o.unitDir, InternetURL: o.internetURL,
		Placement: vm.Placement(e.getenv), HostPorts: drill.HostPorts(o.hostPort), LAN: o.lan,
		Logf: func(f string, a ...any) { fmt.Fprintf(e.stderr, "box: "+f+"\n", a...) }}
	if err := drillOptionErr(d.Check()); err != nil {
		return err
	}
	tmpl, err := drillTemplate(e, o)
	if err != nil {
		return err
	}
	d.Template, d.Image = tmpl.Name, tmpl.Image
	results, err := d.Run(ctx)
	if err != nil && len(results) == 0 {
		return hostErr(g.Client.Socket(), err)
	}
	return drillReport(e, o.json, results, d.Scope(), err, func(err error) error { return hostErr(g.Client.Socket(), err) })
}

// drillTemplate is the template the drill's boxes are minted from (--template, else box
// new's default), checked as box new would (vm.Backend.DrillTemplate).
func drillTemplate(e *env, o *drillOptions) (*templates.Template, error) {
	if o.image != "" {
		return nil, usagef("name a template whose BOX_IMAGE is that image: box drill --backend vm --template NAME",
			"--image is gone: the vm drill mints its boxes from a template, as box new does")
	}
	return e.vmBackend().DrillTemplate(o.template, time.Now())
}
