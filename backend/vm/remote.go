package vm

// Remotes: the vm verbs talk to the local daemon or to an Incus remote of the incus
// client's own configuration, over HTTPS with its client certificate. Every verb gets
// its client from Daemon.Client, so the tag boundary and the placement profile apply on
// the remote exactly as locally. Which remote was asked (--remote, a REMOTE: prefix,
// $BOX_REMOTE) is the CLI's to read; here is what a remote means once named.

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// Daemon is the incusd the vm verbs act on.
type Daemon struct {
	// Remote is the remote's name in the incus client's configuration; "" is the local
	// daemon's socket.
	Remote string
	// Target is the cluster member a new box is placed on (a cluster remote only).
	Target string
	// Socket is the local daemon's socket (a unix:// remote without one uses it).
	Socket string
	// Getenv and Home find the incus client's configuration directory.
	Getenv func(string) string
	Home   string
	// Local is the client of the local daemon (on incus-user's socket, scoped to this
	// user's project).
	Local func() *incus.Client
}

// Client returns a client for incusd: the local socket, or the remote. Nothing is
// dialled until a verb asks; a remote that cannot be used fails the verb's first
// request, with its reason and fix.
func (d Daemon) Client() *incus.Client {
	c, err := d.Dial()
	if err != nil {
		return incus.Broken(err)
	}
	c.Target = d.Target
	return c
}

// Dial returns the client of the remote in force: the local socket without one; a
// unix:// remote's socket; an HTTPS remote with the incus client's certificate.
func (d Daemon) Dial() (*incus.Client, error) {
	if d.Remote == "" {
		return d.Local(), nil
	}
	r, err := incus.LoadRemote(incus.ConfigDir(d.Getenv, d.Home), d.Remote)
	if err != nil {
		return nil, err
	}
	var c *incus.Client
	if r.HTTPS() {
		if c, err = incus.NewRemote(r); err != nil {
			return nil, err
		}
	} else {
		sock := r.Socket
		if sock == "" {
			sock = d.Socket
		}
		c = incus.New(sock)
		if r.Project != "default" {
			c.Project = r.Project
		}
	}
	return c, nil
}

// Check reads the remote in force before a verb does anything: an unknown remote is a
// usage error, an unusable one fails with its fix.
func (d Daemon) Check() error {
	if d.Remote == "" {
		return nil
	}
	c, err := d.Dial()
	var ce *incus.RemoteConfigError
	if errors.As(err, &ce) && ce.Unknown {
		return &errs.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

// Untrusted reports whether err is a remote's answer that it does not trust box's
// client certificate.
func Untrusted(err error) bool { return incus.Untrusted(err) }

// pinRemoteIncus writes into dir the incus client configuration of 'box incus' on a
// remote: its only remote, and the default, is r under the pinned name IncusRemote (the
// same address and project, the client certificate and the accepted server certificate
// copied from r's configuration), so the client acts on exactly the remote box checked.
func pinRemoteIncus(dir string, r *incus.Remote) error {
	var server []byte
	if p := r.PinnedCert(); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		server = b
	}
	cert, err := os.ReadFile(filepath.Join(r.ConfigDir, "client.crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(r.ConfigDir, "client.key"))
	if err != nil {
		return err
	}
	return incus.ClientConfig{DefaultRemote: IncusRemote, CertPEM: cert, KeyPEM: key,
		Remotes: map[string]incus.RemoteSpec{IncusRemote: {Addr: r.Addr, Project: r.Project, ServerCertPEM: server}}}.Write(dir)
}

// Admin returns the client of the host verbs (setup-host, doctor, grant, drill...): the
// remote in force; else $INCUS_SOCKET, then $INCUS_DIR/unix.socket, then the packaged
// daemon's socket (as the incus CLI resolves it), never incus-user's.
func (d Daemon) Admin() *incus.Client {
	if d.Remote != "" {
		return d.Client() // setup-host --remote, doctor --remote
	}
	if s := d.Getenv("INCUS_SOCKET"); s != "" {
		return incus.New(s)
	}
	if dir := d.Getenv("INCUS_DIR"); dir != "" {
		return incus.New(filepath.Join(dir, "unix.socket"))
	}
	return incus.New(incus.DefaultSocket)
}
