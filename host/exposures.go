package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
)

// CheckExposures is doctor's line for the doors of the boxes.
const CheckExposures = "exposures"

// ExposureCheck lists every box's doors from the host's loopback, and fails on a proxy
// device of a box that is not one of box expose's (a listener beyond 127.0.0.1, added
// through incus): it is a door into the box from wherever it listens.
func ExposureCheck(ctx context.Context, c *incus.Client) Check {
	list, err := c.ListBoxes(ctx)
	if err != nil {
		return Check{Name: CheckExposures, Status: Fail, Detail: err.Error()}
	}
	var doors, foreign []string
	for _, b := range list {
		exp, other := vm.Exposures(b.Devices)
		for _, x := range exp {
			doors = append(doors, fmt.Sprintf("127.0.0.1:%d -> %s:%d", x.HostPort, b.Name, x.Port))
		}
		for _, d := range other {
			foreign = append(foreign, fmt.Sprintf("%s (listen %s)", b.Name+"/"+d, b.Devices[d]["listen"]))
		}
	}
	if len(foreign) > 0 {
		return Check{Name: CheckExposures, Status: Fail,
			Detail: "proxy devices box did not open: " + strings.Join(foreign, ", "),
			Fix:    "remove each (box incus BOX -- config device remove {} DEVICE) and use 'box expose', which listens on 127.0.0.1 only"}
	}
	if len(doors) == 0 {
		return Check{Name: CheckExposures, Status: OK, Detail: "no box has a door from the host"}
	}
	return Check{Name: CheckExposures, Status: OK, Detail: "loopback only: " + strings.Join(doors, ", ")}
}
