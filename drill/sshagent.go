package drill

// The ssh rows (issue 22): with box's filtering ssh-agent in the drilled sandbox (the
// profile's ssh, or --ssh-host), the probe does what an attacker inside would do. It
// looks for the private key files of the host agent's keys; it tries to reach the host's
// own agent by path (its $SSH_AUTH_SOCK, and a relay of it the drill serves in the
// working directory, as a forwarded agent kept in a project would sit), by abstract name
// (a relay the drill serves at @box-drill-agent-NONCE in the host's network namespace)
// and through an inherited fd (a connection to it the drill holds open, not
// close-on-exec, as a leaky launcher would); and it speaks the agent protocol
// (golang.org/x/crypto/ssh/agent) to the sandbox's agent: a session-bind to a host key of
// its own making, then a user-authentication signature request, once plain and once with
// the bind marked forwarded. A signature is a BREACH. The probe only ever lists keys from
// the host's agent; the signatures it asks for are of data it made up.

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/sshagent"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"
)

// KindSSHAgent: Targets[0] is the mode, the rest its arguments: "reach" ("path P",
// "abstract NAME", "fd N DEV:INO"; any connection made = seen), "sign" or "forwarded"
// (the request log's path inside, then the public keys to ask a signature of, in
// authorized_keys form; a signature made = seen), or "unknown" (what the outside could
// not learn, as a reason: an error, never a pass).
const KindSSHAgent Kind = "ssh-agent"

// The ssh rows' ids.
const (
	SSHKeyFileID     = "ssh:key-file"
	SSHAgentPathID   = "ssh:host-agent:path"
	SSHAgentAbsID    = "ssh:host-agent:abstract"
	SSHAgentFDID     = "ssh:host-agent:fd"
	SSHSignHostID    = "ssh:sign-disallowed-host"
	SSHSignForwardID = "ssh:sign-forwarded"
	SSHHugeID        = "ssh:huge-request"
)

// sshHugeLen is the huge-request row's request length: past sshagent.MaxRequest, within
// x/crypto's own bound (16 MiB), so an agent without box's bound reads it whole.
const sshHugeLen = 1 << 20

// sshAgentRows adds the ssh rows to plan when p has box's filtering agent, and sets up
// what they probe (the relays, the leaked connection); the returned func undoes it. A
// sandbox without the filter gets no rows: the sockets group's socket:ssh-agent says its
// host agent is absent.
func sshAgentRows(p *bwrap.Plan, nonce string, plan *Plan, stderr io.Writer) (stop func()) {
	if p.SSH == nil {
		return func() {}
	}
	var undo []func()
	stop = func() {
		for _, f := range undo {
			f()
		}
	}
	up := p.SSH.Upstream
	keys, listErr := upstreamKeys(up)
	unknown := func(id, name, expected, why string) Probe {
		return Probe{ID: id, Group: "ssh", Name: name, Kind: KindSSHAgent, Targets: []string{"unknown", why}, Want: Blocked, Expected: expected}
	}
	warn := func(what string, err error) {
		fmt.Fprintf(stderr, "box: warning: the ssh rows' %s: %v\n", what, err)
	}

	// The key files: the private half beside each ~/.ssh/*.pub of a key the host agent holds.
	const keyName, keyExp = "the private key files of the host agent's keys", "invisible"
	if listErr != nil {
		plan.Probes = append(plan.Probes, unknown(SSHKeyFileID, keyName, keyExp, "the host's agent could not be listed: "+listErr.Error()))
	} else {
		files := keyFiles(filepath.Join(p.Spec.Home, ".ssh"), keys)
		plan.Probes = append(plan.Probes, Probe{ID: SSHKeyFileID, Group: "ssh", Name: keyName, Kind: KindPath,
			Targets: files, Want: Blocked, Expected: keyExp, HostAbsent: len(files) == 0})
	}

	// By path: the host agent's own socket, and the drill's relay of it in the working
	// directory (only box's unix-socket mediation keeps the sandbox from that one).
	reach := []string{"path " + up}
	relay := filepath.Join(p.Spec.Workdir, ".box-drill-agent-"+nonce)
	if l, err := net.Listen("unix", relay); err == nil {
		undo = append(undo, relayAgent(l, up))
		reach = append(reach, "path "+relay)
	} else {
		warn("relay in the working directory", err)
	}
	plan.Probes = append(plan.Probes, Probe{ID: SSHAgentPathID, Group: "ssh", Name: "the host's ssh-agent by path",
		Kind: KindSSHAgent, Targets: append([]string{"reach"}, reach...), Want: Blocked, Expected: "unreachable"})

	// By abstract name: a relay in box's network namespace (the host's), and the agent's
	// path as an abstract name.
	abs := []string{"abstract " + up}
	if l, err := net.Listen("unix", "@box-drill-agent-"+nonce); err == nil {
		undo = append(undo, relayAgent(l, up))
		abs = append(abs, "abstract box-drill-agent-"+nonce)
	} else {
		warn("abstract relay", err)
	}
	plan.Probes = append(plan.Probes, Probe{ID: SSHAgentAbsID, Group: "ssh", Name: "the host's ssh-agent by abstract name",
		Kind: KindSSHAgent, Targets: append([]string{"reach"}, abs...), Want: Blocked, Expected: "unreachable"})

	// By an inherited fd: a connection to the host's agent, open across exec.
	const fdName, fdExp = "a connection to the host's ssh-agent, inherited", "not inherited"
	if fd, id, err := leakAgentConn(up); err == nil {
		undo = append(undo, func() { unix.Close(fd) })
		plan.Probes = append(plan.Probes, Probe{ID: SSHAgentFDID, Group: "ssh", Name: fdName, Kind: KindSSHAgent,
			Targets: []string{"reach", fmt.Sprintf("fd %d %s", fd, id)}, Want: Blocked, Expected: fdExp})
	} else {
		plan.Probes = append(plan.Probes, unknown(SSHAgentFDID, fdName, fdExp, "could not connect to the host's agent outside: "+err.Error()))
	}

	// A request longer than the protocol needs: read whole, each connection holds it in
	// box's memory, outside the sandbox's limit.
	plan.Probes = append(plan.Probes, Probe{ID: SSHHugeID, Group: "ssh", Name: fmt.Sprintf("a %d KiB request to the sandbox's agent", sshHugeLen>>10),
		Kind: KindSSHAgent, Targets: []string{"huge", strconv.Itoa(sshHugeLen)}, Want: Blocked,
		Expected: fmt.Sprintf("the connection ends at its length (at most %d KiB is read)", sshagent.MaxRequest>>10)})

	// The signatures: every key the host's agent holds (public keys), asked of the
	// sandbox's agent for a session bound to a host key no allowed host has.
	logInside := bwrap.SSHDirInside + "/" + filepath.Base(p.SSH.Log)
	for _, s := range []struct{ id, mode, name, exp string }{
		{SSHSignHostID, "sign", "a signature for a host not allowed (session-bind, then sign)", "refused"},
		{SSHSignForwardID, "forwarded", "a signature for a forwarded session (session-bind with is_forwarding)", "refused"},
	} {
		switch {
		case listErr != nil:
			plan.Probes = append(plan.Probes, unknown(s.id, s.name, s.exp, "the host's agent could not be listed: "+listErr.Error()))
		case len(keys) == 0:
			plan.Probes = append(plan.Probes, Probe{ID: s.id, Group: "ssh", Name: s.name, Kind: KindSSHAgent, Want: Blocked, Expected: s.exp,
				Skip: "the host's agent holds no key: nothing to ask a signature of"})
		default:
			t := []string{s.mode, logInside}
			for _, k := range keys {
				t = append(t, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))))
			}
			plan.Probes = append(plan.Probes, Probe{ID: s.id, Group: "ssh", Name: s.name, Kind: KindSSHAgent,
				Targets: t, Want: Blocked, Expected: s.exp})
		}
	}
	return stop
}

// upstreamKeys lists the host agent's public keys.
func upstreamKeys(sock string) ([]ssh.PublicKey, error) {
	c, err := net.DialTimeout("unix", sock, 3*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	ks, err := agent.NewClient(c).List()
	if err != nil {
		return nil, err
	}
	out := make([]ssh.PublicKey, len(ks))
	for i, k := range ks {
		out[i] = k
	}
	return out, nil
}

// keyFiles are the private key files in dir whose .pub is one of keys.
func keyFiles(dir string, keys []ssh.PublicKey) []string {
	pubs, _ := filepath.Glob(filepath.Join(dir, "*.pub"))
	var out []string
	for _, pub := range pubs {
		b, err := os.ReadFile(pub)
		if err != nil {
			continue
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			continue
		}
		for _, want := range keys {
			if bytes.Equal(k.Marshal(), want.Marshal()) {
				priv := strings.TrimSuffix(pub, ".pub")
				if _, err := os.Lstat(priv); err == nil {
					out = append(out, priv)
				}
				break
			}
		}
	}
	return out
}

// relayAgent serves l, relaying each connection to the host's agent, until the returned
// stop (which removes a path socket too).
func relayAgent(l net.Listener, upstream string) func() {
	go sshagent.Relay(l, upstream)
	return func() { l.Close() }
}

// leakAgentConn connects to the host's agent and leaves the connection on an fd above
// box's own (as bwrapKernel's home fd), not close-on-exec; id is its "DEV:INO".
func leakAgentConn(upstream string) (int, string, error) {
	c, err := net.DialTimeout("unix", upstream, 3*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, "", err
	}
	fd, ferr := -1, error(nil)
	raw.Control(func(s uintptr) { fd, ferr = unix.FcntlInt(s, unix.F_DUPFD, 100) })
	if ferr != nil {
		return 0, "", ferr
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return 0, "", err
	}
	return fd, fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// probeSSHAgent runs a KindSSHAgent probe inside.
func (r *runner) probeSSHAgent(targets []string) (bool, string, error) {
	if len(targets) < 2 {
		return false, "", errors.New("want a mode and its arguments")
	}
	mode, args := targets[0], targets[1:]
	switch mode {
	case "unknown":
		return false, "", errors.New(args[0])
	case "reach":
		var seen []string
		var notes []string
		for _, t := range args {
			ok, d, err := r.reachAgent(t)
			if err != nil {
				return false, "", err
			}
			if ok {
				seen = append(seen, d)
			} else {
				notes = append(notes, d)
			}
		}
		if len(seen) > 0 {
			return true, strings.Join(seen, "; "), nil
		}
		return false, strings.Join(notes, "; "), nil
	case "sign", "forwarded":
		return r.askSignature(mode == "forwarded", args)
	case "huge":
		return r.hugeRequest(args[0])
	}
	return false, "", fmt.Errorf("unknown ssh-agent probe mode %q", mode)
}

// reachAgent tries one way to the host's agent: connected = seen (the detail says what
// answered). Refusals box or the kernel give, and a name that is not there, are not seen;
// any other failure is an error.
func (r *runner) reachAgent(t string) (bool, string, error) {
	how, arg, _ := strings.Cut(t, " ")
	var c net.Conn
	var err error
	switch how {
	case "path":
		c, err = net.DialTimeout("unix", arg, max(r.timeout, time.Second))
	case "abstract":
		c, err = net.DialTimeout("unix", "@"+arg, max(r.timeout, time.Second))
	case "fd":
		var fd int
		var id string
		if _, err := fmt.Sscanf(arg, "%d %s", &fd, &id); err != nil {
			return false, "", fmt.Errorf("fd target %q: %v", arg, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return false, fmt.Sprintf("fd %d not open", fd), nil
		}
		if fmt.Sprintf("%d:%d", st.Dev, st.Ino) != id {
			return false, fmt.Sprintf("fd %d is something else", fd), nil
		}
		f := os.NewFile(uintptr(fd), "inherited")
		c, err = net.FileConn(f)
		f.Close()
		if err != nil {
			return true, fmt.Sprintf("fd %d: the connection to the host's agent is open inside", fd), nil
		}
		t = fmt.Sprintf("fd %d", fd)
	default:
		return false, "", fmt.Errorf("unknown way %q", how)
	}
	if err != nil {
		for _, e := range []syscall.Errno{unix.ENOENT, unix.ENOTDIR, unix.EACCES, unix.EPERM, unix.ECONNREFUSED} {
			if errors.Is(err, e) {
				return false, t + ": " + unix.ErrnoName(e), nil
			}
		}
		return false, "", fmt.Errorf("%s: %w", t, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(max(r.timeout, time.Second)))
	if ks, err := agent.NewClient(c).List(); err == nil {
		return true, fmt.Sprintf("%s: the host's agent answered, listing %d key(s)", t, len(ks)), nil
	}
	return true, t + ": connected", nil
}

// sessionBindMsg is session-bind@openssh.com's content (OpenSSH PROTOCOL.agent).
type sessionBindMsg struct {
	HostKey    []byte
	SessionID  []byte
	Signature  []byte
	Forwarding bool
}

// askSignature binds a connection to the sandbox's agent ($SSH_AUTH_SOCK) to a host key
// of its own (forwarded or not), then asks a user-authentication signature for that
// session of every key it was given and every key the agent lists. args: the request
// log's path inside, then the keys.
func (r *runner) askSignature(forwarded bool, args []string) (bool, string, error) {
	c, err := r.dialAgent()
	if err != nil {
		return false, "", err
	}
	defer c.Close()
	ag := agent.NewClient(c)
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	host, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return false, "", err
	}
	sid := make([]byte, 32)
	rand.Read(sid)
	hsig, err := host.Sign(rand.Reader, sid)
	if err != nil {
		return false, "", err
	}
	bind := ssh.Marshal(sessionBindMsg{HostKey: host.PublicKey().Marshal(), SessionID: sid, Signature: ssh.Marshal(hsig), Forwarding: forwarded})
	// The bind may be refused (an agent without the extension): ask anyway, as an
	// attacker would. The keys the agent lists go last: the log's last refusal is about
	// a key the sandbox may use.
	_, bindErr := ag.Extension("session-bind@openssh.com", bind)
	var keys, shown []ssh.PublicKey
	seen := map[string]bool{}
	if listed, err := ag.List(); err == nil {
		for _, k := range listed {
			shown = append(shown, k)
			seen[string(k.Marshal())] = true
		}
	}
	for _, a := range args[1:] {
		if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(a)); err == nil && !seen[string(k.Marshal())] {
			keys = append(keys, k)
		}
	}
	keys = append(keys, shown...)
	if len(keys) == 0 {
		return false, "", errors.New("no key to ask a signature of")
	}
	var refused []string
	for _, k := range keys {
		data := ssh.Marshal(sshagent.UserAuthRequest{SessionID: sid, Type: 50, User: "git", Service: "ssh-connection", Method: "publickey", HasSig: true, Algo: k.Type(), PubKey: k.Marshal()})
		if _, err := ag.Sign(k, data); err == nil {
			what := "a host key no allowed host has"
			if forwarded {
				what = "a forwarded session"
			}
			return true, fmt.Sprintf("signed with %s for %s", ssh.FingerprintSHA256(k), what), nil
		}
		refused = append(refused, ssh.FingerprintSHA256(k))
	}
	d := fmt.Sprintf("refused for %s", strings.Join(refused, ", "))
	if bindErr != nil {
		d += " (session-bind refused: " + bindErr.Error() + ")"
	}
	if why := lastRefusal(args[0]); why != "" {
		d += "; the agent's log: " + why
	}
	return false, d, nil
}

// lastRefusal is the reason of the request log's last refused signature ("" none).
func lastRefusal(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	why := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec sshagent.Record
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Op == "sign" && !rec.Allowed {
			why = rec.Reason
		}
	}
	return why
}

// hugeRequest sends the sandbox's agent one request of n bytes (an unknown message): an
// answer means it read the whole of it (seen); the connection ending first is the bound.
func (r *runner) hugeRequest(n string) (bool, string, error) {
	size, err := strconv.Atoi(n)
	if err != nil || size < 1 {
		return false, "", fmt.Errorf("huge: length %q", n)
	}
	c, err := r.dialAgent()
	if err != nil {
		return false, "", err
	}
	defer c.Close()
	msg := make([]byte, 4+size)
	binary.BigEndian.PutUint32(msg, uint32(size))
	msg[4] = 0xf0
	written, werr := c.Write(msg)
	reply := make([]byte, 5)
	if _, err := io.ReadFull(c, reply); err == nil {
		return true, fmt.Sprintf("the agent read all %d bytes and answered (message %d): every connection held mid-request keeps as much of box's memory", size, reply[4]), nil
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		return false, "", fmt.Errorf("the agent neither answered nor closed the connection (%d bytes written: %v)", written, werr)
	}
	return false, fmt.Sprintf("the connection ended at the length (%d of the %d bytes went into the socket)", max(written-4, 0), size), nil
}

// dialAgent connects to the sandbox's agent ($SSH_AUTH_SOCK), with a deadline for the
// whole exchange.
func (r *runner) dialAgent() (net.Conn, error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, errors.New("no SSH_AUTH_SOCK inside: box's agent is missing")
	}
	c, err := net.DialTimeout("unix", sock, max(r.timeout, time.Second))
	if err != nil {
		return nil, fmt.Errorf("the sandbox's agent: %w", err)
	}
	c.SetDeadline(time.Now().Add(4 * max(r.timeout, time.Second)))
	return c, nil
}
