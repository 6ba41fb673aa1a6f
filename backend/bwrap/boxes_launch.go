package bwrap

import (
	"errors"
	"os/exec"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/profiles"
)

// session is a Session on be's streams and environment; yes skips its question.
func (be Boxes) session(yes bool) *Session {
	s := be.Session
	s.Yes = yes
	return &s
}

// BoxRequest is the resolver's request for a launch in b, once its stamp's keys are
// checked.
func BoxRequest(b *dirbox.Box, command []string, allowRoot bool, allow []string) (Request, error) {
	if err := profiles.CheckKeys(profiles.UseBox, b.Profile, b.Template); err != nil {
		return Request{}, err
	}
	req := Request{
		Profile: b.Profile, Template: b.Template, Network: b.Network,
		Command: command, AllowRoot: allowRoot, Allow: allow,
		Persistent: &Persistent{Name: b.Name, Home: b.Home(), Instance: b.Instance(), Workdir: b.Workdir},
	}
	return req, boxPorts(b, &req) // publish_box.go: box expose's ports
}

// Plan resolves req, a launch in b (BoxRequest): the stamped profile, template and tier,
// the box's home, instance directory and working directory; everything else exactly as
// box run.
func (be Boxes) Plan(s *Session, b *dirbox.Box, req Request) (*Plan, error) {
	p, err := s.Resolve(req)
	return p, boxErr(b, err)
}

// boxErr says, of a failure to gather the host's facts, which directory b is bound to.
func boxErr(b *dirbox.Box, err error) error {
	var ge *GatherError
	if errors.As(err, &ge) {
		return &BoundError{b.Name, b.Workdir, ge.Err}
	}
	return err
}

// ProtBoxSession refuses a second session in a bwrap box while one runs (switched off
// only in a test build, so the drill can show the breach: the second session's bwrap
// makes a mount point on the host through a link the first one swapped in).
const ProtBoxSession = "box-session"

// lockSession takes the session's hold on b (dirbox.LockSession): one session at a time.
func lockSession(b *dirbox.Box) (func(), error) {
	if protectionOff(ProtBoxSession) {
		return b.Lock(false)
	}
	return b.LockSession()
}

// launch runs command in the box, holding its session lock for as long as it runs.
func (be Boxes) launch(name string, command []string, l backend.LaunchRequest, noTTY bool) error {
	b, err := be.Lookup(name)
	if err != nil {
		return err
	}
	unlock, err := lockSession(b)
	if err != nil {
		return err
	}
	defer unlock()
	req, err := BoxRequest(b, command, l.AllowRoot, l.Allow)
	if err != nil {
		return err
	}
	req.HostPorts = l.HostPorts // --host-port: this session's, beside the profile's (publish.go)
	s := be.session(l.Yes)
	s.NoTTY = noTTY
	out, err := s.Run(req)
	if err := boxErr(b, err); err != nil {
		return err
	}
	if out.Code != 0 {
		return &backend.ExitError{Code: out.Code}
	}
	return nil
}

// Enter opens a login shell in the box: bash if the host has it, else sh.
func (be Boxes) Enter(name string, l backend.LaunchRequest) error {
	shell := "sh"
	if _, err := exec.LookPath("bash"); err == nil {
		shell = "bash"
	}
	return be.launch(name, []string{shell, "-l"}, l, false)
}

// Exec runs cmd in the box; with l.TTY on a terminal it gets one of its own, else its
// stdio are pipes (a terminal too), as docker exec without -t.
func (be Boxes) Exec(name string, cmd []string, l backend.LaunchRequest) error {
	return be.launch(name, cmd, l, !l.TTY)
}
