package drill

import (
	"errors"
	"testing"
)

// The vm drill's LAN targets are ADDR:PORT, the address a name or an IP; anything else
// is an OptionError naming the target, for the CLI to word by its flag.
func TestVMDrillCheck(t *testing.T) {
	for lan, bad := range map[string]bool{"192.168.1.10:80": false, "nas.lan:445": false, "[fe80::1]:22": false,
		"nope": true, "192.168.1.10": true, "fe80::1": true} {
		err := VMDrill{LAN: []string{"10.0.0.1:80", lan}}.Check()
		var oe *OptionError
		switch {
		case !bad && err != nil:
			t.Errorf("%q: %v", lan, err)
		case bad && (!errors.As(err, &oe) || oe.Option != OptionLAN || oe.Value != lan):
			t.Errorf("%q: %v, want an OptionError for it", lan, err)
		}
	}
	d := VMDrill{Template: "t", Image: "images:debian/12", HostPorts: []int{22, 80}}
	if got, want := d.Scope(), "vm, template t (image images:debian/12), host ports [22 80]"; got != want {
		t.Errorf("scope %q, want %q", got, want)
	}
}
