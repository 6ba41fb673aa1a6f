package main

import (
	"fmt"
	"net"

	"github.com/heavy-duty/box/drill"
)

// runDrillVM is box drill --backend vm: the stack row by row, then two boxes probed live.
func runDrillVM(e *env, o *drillOptions) error {
	ctx, cancel := hostContext()
	defer cancel()
	c := hostClient(e)
	defer c.Close()
	ports := drill.HostListening()
	if o.hostPort != 0 {
		ports = []int{o.hostPort}
	}
	for _, t := range o.lan {
		if _, _, err := net.SplitHostPort(t); err != nil {
			return usagef("for example --lan 192.168.1.10:80", "--lan %q: want ADDR:PORT", t)
		}
	}
	results, err := drill.RunVM(ctx, drill.VMOptions{
		Client: c, Image: o.image, UnitDir: o.unitDir, InternetURL: o.internetURL,
		HostPorts: ports, LAN: o.lan,
		Logf: func(f string, a ...any) { fmt.Fprintf(e.stderr, "box: "+f+"\n", a...) },
	})
	// Every verb refusing an untagged instance is proven by the vm verbs' own tests for
	// now; the drill row comes with them.
	results = append(results, drill.Result{ID: "verbs:untagged", Group: "verbs",
		Probe: "every verb refuses an untagged instance", Targets: []string{}, Expected: "refused",
		Observed: "not probed by the drill yet", Status: drill.Skip})
	if err != nil && len(results) <= 1 {
		return hostErr(c, err)
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
		return hostErr(c, err)
	}
	what := "vm, image " + o.image + ", host ports " + fmt.Sprint(ports)
	if drill.Failed(results) {
		return fmt.Errorf("drill (%s): %s", what, drill.Summary(results))
	}
	fmt.Fprintf(e.stderr, "box: drill (%s): %s\n", what, drill.Summary(results))
	return nil
}
