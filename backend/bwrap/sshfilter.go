package bwrap

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/backend/bwrap/sshagent"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// box's filtering ssh-agent (package sshagent; docs/bwrap.md, "SSH agent"): box serves
// it outside the sandbox on a socket in the run's own directory, which is bound
// read-only at SSHDirInside with the sandbox's known_hosts and ssh config. The host's
// agent socket is never bound; the unix-socket mediation admits the filter's socket by
// name (it is box's), and refuses every other host socket as before.

// ProtSSHAgent is the filter (a test build can switch it off: the sandbox's socket then
// relays the host's agent unfiltered, as forwarding the raw socket would).
const ProtSSHAgent = "ssh-agent"

// ProtSSHAgentSize is the filter's bound on one request's length (sshagent.MaxRequest; a
// test build can lift it to x/crypto's own 16 MiB, so the drill's ssh:huge-request row
// can show the breach).
const ProtSSHAgentSize = "ssh-agent-size"

// SSHDirInside holds, inside the sandbox, the filter's socket, the allowed hosts'
// known_hosts, the ssh config that uses it, and the run's request log.
const SSHDirInside = "/run/box/ssh"

// The files of the run's ssh directory.
const (
	sshSockName   = "agent.sock"
	sshKnownHosts = "known_hosts"
	sshConfigName = "config"
	sshLogName    = "requests.log"
)

// SSHFacts are what Gather found for the filter: the allowed hosts with their keys (from
// the user's known_hosts and the profile's host_keys), or why they could not be found.
type SSHFacts struct {
	Hosts []sshagent.Host
	Err   error
}

// SSHPlan is a run's filtering agent (Plan.SSH; nil: none).
type SSHPlan struct {
	Policy sshagent.Policy
	// Upstream is the host's agent ($SSH_AUTH_SOCK outside), never bound inside.
	Upstream string
	// Dir is the run's directory on the host (bound at SSHDirInside); Log its request log.
	Dir, Log string
	// ByName are the hosts the allowlist tier's proxy admits by the address its DNS
	// answered (nil on the other tiers).
	ByName []inet.SSHHost
}

// ErrSSHNoAgent: the profile asks for the filter and box's environment names no agent.
var ErrSSHNoAgent = errors.New("ssh: SSH_AUTH_SOCK is not set: there is no host agent to filter")

// ErrSSHNoKeys: --ssh-host was given and the profile chooses no key.
var ErrSSHNoKeys = errors.New("--ssh-host: the profile chooses no key (ssh.keys)")

// ErrSSHAllowlist: an SSH host on the allowlist tier that is not an internet name (an
// address, a single label): the tier admits SSH only to the address its DNS answered for
// a name (sshallow.go).
var ErrSSHAllowlist = errors.New("on the allowlist tier an SSH host must be an internet name (the tier admits SSH only to the address its DNS answered for the name)")

// sshHosts are the destinations a request allows: the profile's, then --ssh-host's.
func (r Request) sshHosts() []string {
	var out []string
	if r.Profile.SSH != nil {
		out = append(out, r.Profile.SSH.Hosts...)
	}
	return append(out, r.SSHHosts...)
}

// gatherSSH reads the allowed hosts' keys: the user's and the system's known_hosts.
func gatherSSH(r Request, o Outside) SSHFacts {
	if r.Profile.SSH == nil && len(r.SSHHosts) == 0 {
		return SSHFacts{}
	}
	var lines []string
	if r.Profile.SSH != nil {
		lines = r.Profile.SSH.HostKeys
	}
	hosts, err := sshagent.HostKeys(r.sshHosts(), []string{filepath.Join(o.Home, ".ssh", "known_hosts"), "/etc/ssh/ssh_known_hosts"}, lines)
	return SSHFacts{Hosts: hosts, Err: err}
}

// resolveSSH plans the filter (pure) and sets the sandbox's SSH_AUTH_SOCK and
// GIT_SSH_COMMAND in set.
func (p *Plan) resolveSSH(r Request, f Facts, network policy.Tier, set map[string]string) error {
	if r.Profile.SSH == nil && len(r.SSHHosts) == 0 {
		return nil
	}
	for _, h := range r.SSHHosts {
		if err := sshagent.CheckHost(h); err != nil {
			return &errs.UsageError{Err: err}
		}
	}
	if r.Profile.SSH == nil {
		return errs.WithHint(ErrSSHNoKeys, "add ssh = { keys = [\"SHA256:...\"] } to a profile of yours (ssh-add -l lists the fingerprints), and run with -p PROFILE")
	}
	if f.SSH.Err != nil {
		return errs.WithHint(f.SSH.Err, "connect once outside the sandbox (ssh -T HOST) so known_hosts holds the host's key, or give it in the profile's ssh.host_keys")
	}
	var byName []inet.SSHHost
	if network.Proxied() {
		var err error
		if byName, err = sshAllowHosts(r.sshHosts()); err != nil {
			return errs.WithHint(err, "name the host as DNS knows it (git.example.org, not its address), or run with --network internet or full")
		}
	}
	up := envMap(f.Environ)["SSH_AUTH_SOCK"]
	if up == "" || !filepath.IsAbs(up) {
		return errs.WithHint(ErrSSHNoAgent, "start ssh-agent and ssh-add your key, then run box from that shell")
	}
	if f.RunID == "" {
		return errors.New("ssh: no run id")
	}
	dir := filepath.Join(f.DataHome, "box", "ssh", f.RunID)
	p.SSH = &SSHPlan{
		Policy:   sshagent.Policy{Keys: r.Profile.SSH.Keys, Hosts: f.SSH.Hosts, Sign: r.Profile.SSH.Sign},
		Upstream: up, Dir: dir, Log: filepath.Join(dir, sshLogName), ByName: byName,
	}
	set["SSH_AUTH_SOCK"] = SSHDirInside + "/" + sshSockName
	set["GIT_SSH_COMMAND"] = "ssh -F " + SSHDirInside + "/" + sshConfigName
	return nil
}

// sshSpec binds the run's ssh directory and admits its socket (called once the unix
// sockets are planned).
func (p *Plan) sshSpec() {
	if p.SSH == nil {
		return
	}
	p.Spec.SSHDir = p.SSH.Dir
	p.Spec.UnixSockets.Allowed = append(p.Spec.UnixSockets.Allowed, SSHDirInside+"/"+sshSockName)
	p.Policy.SSH = sshText(p.SSH, p.Spec.StateDir)
}

// sshText is SANDBOX.md's part about the agent.
func sshText(s *SSHPlan, stateDir string) string {
	var hosts []string
	for _, h := range s.Policy.Hosts {
		hosts = append(hosts, h.Name)
	}
	var b strings.Builder
	b.WriteString("## SSH\n\n")
	b.WriteString("An ssh-agent is here (`SSH_AUTH_SOCK`): box's filter in front of the operator's agent. The private keys are not in the sandbox. ")
	if len(hosts) > 0 {
		fmt.Fprintf(&b, "It signs SSH logins only to `%s` (host keys checked strictly from `%s/%s`; git uses `ssh -F %s/%s` through GIT_SSH_COMMAND), never for a forwarded agent (`ssh -A`). ", strings.Join(hosts, "`, `"), SSHDirInside, sshKnownHosts, SSHDirInside, sshConfigName)
	} else {
		b.WriteString("It signs no SSH login. ")
	}
	if len(s.ByName) > 0 {
		fmt.Fprintf(&b, "On this allowlist network, TCP to those hosts' SSH ports reaches them only by name (connect to the name, which this sandbox's DNS answers; never to an address), and each connection is written to `~/%s/%s` (`ssh` when admitted, `refused` with the reason otherwise). ", stateDir, RefusalsFile)
	}
	if s.Policy.Sign {
		b.WriteString("It signs git commits and tags (`gpg.format=ssh`, namespace `git`). ")
	}
	fmt.Fprintf(&b, "Adding, removing and locking keys is refused. Every request and the reason for each refusal is written, one JSON line each, to `%s/%s`: read it when a push fails, and ask the operator for the exact host you need.\n\n", SSHDirInside, sshLogName)
	return b.String()
}

// startSSH creates the run's ssh directory (known_hosts, config, log, socket) and serves
// the filter until the returned stop, which prints the summary unless quiet.
func (p *Plan) startSSH(quiet bool, stderr io.Writer) (func(), error) {
	s := p.SSH
	if s == nil {
		return func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(s.Dir), 0o700); err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	// The sandbox runs as the operator's uid: 0600 files in a 0700 directory are
	// readable inside, where the directory is bound read-only.
	write := func(name string, data []byte) error {
		return os.WriteFile(filepath.Join(s.Dir, name), data, 0o600)
	}
	if err := write(sshKnownHosts, sshagent.KnownHosts(s.Policy.Hosts)); err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	if err := write(sshConfigName, sshagent.Config(SSHDirInside+"/"+sshKnownHosts, SSHDirInside+"/"+sshSockName)); err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	lg, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ssh agent: log: %w", err)
	}
	sock := filepath.Join(s.Dir, sshSockName)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		lg.Close()
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	up := s.Upstream
	f := &sshagent.Filter{Policy: s.Policy, Log: lg, Dial: func() (net.Conn, error) { return net.Dial("unix", up) }}
	if protectionOff(ProtSSHAgentSize) {
		f.MaxRequest = 16 << 20 // x/crypto's ServeAgent's own bound
	}
	done := make(chan struct{})
	if protectionOff(ProtSSHAgent) {
		go func() { sshagent.Relay(ln, up); close(done) }() // the filter switched off (test builds only)
		return func() { ln.Close(); <-done; lg.Close(); os.Remove(sock) }, nil
	}
	go func() { f.Serve(ln); close(done) }()
	return func() {
		f.Close()
		<-done
		lg.Close()
		os.Remove(sock)
		if !quiet {
			fmt.Fprintf(stderr, "box: %s (log: %s)\n", f.Summary(), s.Log)
		}
	}, nil
}
