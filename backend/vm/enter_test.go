package vm

import (
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/internal/errs"
)

// --host-port on box shell or box exec of a vm box is refused by name, never ignored.
func TestRefuseLaunchHostPorts(t *testing.T) {
	err := refuseLaunch(backend.LaunchRequest{HostPorts: []uint16{5432}})
	if err == nil || !errs.IsUsage(err) || !strings.Contains(err.Error(), "--host-port") || !strings.Contains(errs.HintOf(err), "box expose") {
		t.Fatalf("refuseLaunch with host ports: %v", err)
	}
}
