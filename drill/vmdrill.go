package drill

// box drill --backend vm in one call: the stack and two boxes probed live (RunVM), the
// boxes minted and the verbs run by this very binary, then each grant's rows. The CLI
// checks its flags and renders the rows.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/heavy-duty/box/host"
)

// VMDrill is the vm drill's inputs.
type VMDrill struct {
	// Grants holds the admin client the drill runs on (Grants.Client) and the grants
	// it probes (a local daemon only).
	Grants host.GrantHost
	// Template and Image: the template the drill's boxes are minted from, and its image.
	Template, Image string
	Environ         []string // the environment the box binary runs in
	UnitDir         string   // where setup-host wrote the boot unit
	InternetURL     string
	Placement       string // the placement profile
	HostPorts       []int  // HostPorts' answer
	LAN             []string
	Logf            func(string, ...any)
}

// HostPorts are the host ports the vm drill probes: port, else those the host listens on.
func HostPorts(port int) []int {
	if port != 0 {
		return []int{port}
	}
	return HostListening()
}

// Check refuses a malformed LAN target (ADDR:PORT, the address a name or an IP; the
// CLI words it with its flag).
func (d VMDrill) Check() error {
	for _, t := range d.LAN {
		if _, _, err := net.SplitHostPort(t); err != nil {
			return &OptionError{OptionLAN, t}
		}
	}
	return nil
}

// Scope is what the report's closing line says was drilled.
func (d VMDrill) Scope() string {
	return "vm, template " + d.Template + " (image " + d.Image + "), host ports " + fmt.Sprint(d.HostPorts)
}

// Run runs the drill. The verbs row runs this very binary, as a user would, against the
// same incusd. A failure with no row at all is the only error without results; rows
// and an error together are the rows RunVM got before it stopped.
func (d VMDrill) Run(ctx context.Context) ([]Result, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("locating the box binary for the verbs probe: %w", err)
	}
	run := BinaryRunner(exe, d.Environ)
	c := d.Grants.Client
	results, err := RunVM(ctx, VMOptions{
		Client: c, Image: d.Image, UnitDir: d.UnitDir, InternetURL: d.InternetURL,
		Mint: MintByVerb(run, d.Template), Profile: d.Placement,
		HostPorts: d.HostPorts, LAN: d.LAN, Verbs: run, ProbeBinary: exe, Logf: d.Logf,
	})
	if err != nil && len(results) == 0 {
		return nil, err
	}
	if c.RemoteName() == "" {
		results = append(results, GrantRows(ctx, d.Grants)...)
	}
	return results, err
}
