package main

import (
	"fmt"
	"net"
	"time"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/templates"
)

// runDrillVM is box drill --backend vm: the stack row by row, then two boxes probed live.
func runDrillVM(e *env, o *drillOptions) error {
	ctx, cancel := hostContext()
	defer cancel()
	g := grantHost(e) // the admin client (vm.Daemon.Admin), and the grants the drill probes
	c := g.Client
	defer c.Close()
	ports := drill.HostPorts(o.hostPort)
	for _, t := range o.lan {
		if _, _, err := net.SplitHostPort(t); err != nil {
			return usagef("for example --lan 192.168.1.10:80", "--lan %q: want ADDR:PORT", t)
		}
	}
	tmpl, err := drillTemplate(e, o)
	if err != nil {
		return err
	}
	results, err := drill.VMDrill{ // drill/vmdrill.go
		Grants: g, Template: tmpl.Name, Image: tmpl.Image, Environ: e.environ(),
		UnitDir: o.unitDir, InternetURL: o.internetURL, Placement: vm.Placement(e.getenv),
		HostPorts: ports, LAN: o.lan,
		Logf: func(f string, a ...any) { fmt.Fprintf(e.stderr, "box: "+f+"\n", a...) },
	}.Run(ctx)
	if err != nil && len(results) == 0 {
		return hostErr(c.Socket(), err)
	}
	if o.json {
		err2 := drill.RenderJSON(e.stdout, results)
		if err == nil {
			err = err2
		}
	} else if err2 := drill.Render(e.stdout, results); err == nil {
		err = err2
	}
	if err != nil {
		return hostErr(c.Socket(), err)
	}
	what := "vm, template " + tmpl.Name + " (image " + tmpl.Image + "), host ports " + fmt.Sprint(ports)
	if drill.Failed(results) {
		return fmt.Errorf("drill (%s): %s", what, drill.Summary(results))
	}
	fmt.Fprintf(e.stderr, "box: drill (%s): %s\n", what, drill.Summary(results))
	return nil
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
