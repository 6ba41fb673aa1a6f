package vm

import (
	"errors"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/internal/errs"
)

// --host-port on box shell or box exec of a vm box is refused by name, never ignored
// (the CLI words the hint: box expose).
func TestRefuseLaunchHostPorts(t *testing.T) {
	err := refuseLaunch("work", backend.LaunchRequest{HostPorts: []uint16{5432}})
	if err == nil || !errs.IsUsage(err) || !errors.Is(err, ErrHostPorts) || !strings.Contains(err.Error(), "--host-port") {
		t.Fatalf("refuseLaunch with host ports: %v", err)
	}
}

// box exec -t of a vm box is refused by name (box shell is its terminal), before the
// other launch settings: the CLI words it.
func TestRefuseLaunchTTY(t *testing.T) {
	var set *backend.SettingsError
	err := refuseLaunch("work", backend.LaunchRequest{TTY: true, Yes: true, HostPorts: []uint16{5432}})
	if !errors.As(err, &set) || set.Backend != "vm" || strings.Join(set.Settings, ",") != "tty" {
		t.Fatalf("refuseLaunch with a terminal: %#v", err)
	}
}
