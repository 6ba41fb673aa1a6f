package incus

// Remotes: box reads the incus client's own configuration (config.yml, client.crt,
// client.key, servercerts/NAME.crt) and talks to a remote's REST API over HTTPS with
// that client certificate, the server pinned to the certificate the client accepted.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"gopkg.in/yaml.v3"
)

// LocalRemote is the incus client's name for the local daemon's unix socket.
const LocalRemote = "local"

// ConfigDir is the incus client's configuration directory: $INCUS_CONF, else
// ~/.config/incus (as the incus CLI finds it).
func ConfigDir(getenv func(string) string, home string) string {
	if d := getenv("INCUS_CONF"); d != "" {
		return d
	}
	return filepath.Join(home, ".config", "incus")
}

// Remote is one remote of the incus client's configuration, with what box needs to
// reach it.
type Remote struct {
	Name     string
	Addr     string // https://HOST:PORT, or unix:// (a socket: Socket)
	Project  string // the remote's project ("" or "default": the default project)
	Protocol string
	AuthType string
	// Socket is the socket path of a unix:// remote ("" for the default socket).
	Socket string
	// ConfigDir is the directory the remote was read from (for messages and for the
	// incus CLI of 'box incus').
	ConfigDir string

	clientCert tls.Certificate
	// serverCert is the certificate the incus client accepted for the remote
	// (servercerts/NAME.crt); nil: the server must chain to the system's roots.
	serverCert *x509.Certificate
}

// HTTPS reports whether the remote is reached over HTTPS (else a unix socket).
func (r *Remote) HTTPS() bool { return strings.HasPrefix(r.Addr, "https://") }

// PinnedCert is the accepted server certificate's path, "" when none was accepted.
func (r *Remote) PinnedCert() string {
	if r.serverCert == nil {
		return ""
	}
	return filepath.Join(r.ConfigDir, "servercerts", r.Name+".crt")
}

// clientConfig is the part of config.yml box reads. Other keys (aliases, ...) are the
// incus client's: they are left alone, not refused.
type clientConfig struct {
	DefaultRemote string                  `yaml:"default-remote"`
	Remotes       map[string]remoteConfig `yaml:"remotes"`
}

type remoteConfig struct {
	Addr     string `yaml:"addr"`
	AuthType string `yaml:"auth_type"`
	Project  string `yaml:"project"`
	Protocol string `yaml:"protocol"`
	Public   bool   `yaml:"public"`
}

// RemoteConfigError is a remote that cannot be used as it is configured: unknown,
// an image server, another authentication, missing certificates. Hint says what to do.
type RemoteConfigError struct {
	Remote string
	Dir    string
	Reason string
	Fix    string
	// Unknown: the configuration has no remote of that name (the caller asked wrong).
	Unknown bool
}

func (e *RemoteConfigError) Error() string {
	return fmt.Sprintf("remote %q (incus client configuration %s): %s", e.Remote, e.Dir, e.Reason)
}

// Hint is the fix.
func (e *RemoteConfigError) Hint() string { return e.Fix }

// LoadRemote reads remote name from the incus client configuration in dir. The local
// remote exists without a configuration (the default socket), as in the incus CLI.
func LoadRemote(dir, name string) (*Remote, error) {
	cerr := func(reason, fix string) error {
		return &RemoteConfigError{Remote: name, Dir: dir, Reason: reason, Fix: fix}
	}
	if name == "" || strings.ContainsAny(name, ":/ \t\n") {
		return nil, &RemoteConfigError{Remote: name, Dir: dir, Reason: "not a remote name", Fix: "remote names are those of 'incus remote list'", Unknown: true}
	}
	var cfg clientConfig
	b, err := os.ReadFile(filepath.Join(dir, "config.yml"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, cerr(err.Error(), "box reads the incus client's configuration: make config.yml readable, or set INCUS_CONF")
	default:
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			return nil, cerr("config.yml: "+err.Error(), "fix the file with 'incus remote' commands")
		}
	}
	rc, ok := cfg.Remotes[name]
	if !ok && name == LocalRemote {
		rc, ok = remoteConfig{Addr: "unix://", Protocol: "incus"}, true
	}
	if !ok {
		known := make([]string, 0, len(cfg.Remotes))
		for k := range cfg.Remotes {
			known = append(known, k)
		}
		slices.Sort(known)
		fix := "add it with 'incus remote add " + name + " https://HOST:8443' (INCUS_CONF chooses another configuration directory)"
		if len(known) > 0 {
			fix = "the remotes there are " + strings.Join(known, ", ") + "; " + fix
		}
		return nil, &RemoteConfigError{Remote: name, Dir: dir, Reason: "no such remote", Fix: fix, Unknown: true}
	}
	r := &Remote{Name: name, Addr: rc.Addr, Project: rc.Project, Protocol: rc.Protocol, AuthType: rc.AuthType, ConfigDir: dir}
	if r.Protocol != "" && r.Protocol != "incus" {
		return nil, cerr("protocol "+r.Protocol+": an image server, not an Incus daemon", "box mints boxes on an Incus daemon: name a remote added with 'incus remote add NAME https://HOST:8443'")
	}
	switch {
	case strings.HasPrefix(r.Addr, "unix://"):
		r.Socket = strings.TrimPrefix(r.Addr, "unix://")
		return r, nil
	case strings.HasPrefix(r.Addr, "https://"):
	default:
		return nil, cerr(fmt.Sprintf("address %q: box reaches a remote over https:// or unix://", r.Addr), "re-add the remote with an https:// address")
	}
	if r.AuthType != "" && r.AuthType != "tls" {
		return nil, cerr("auth_type "+r.AuthType+": box authenticates with the incus client's TLS certificate only",
			"re-add the remote with 'incus remote add "+name+" ADDR --auth-type=tls'")
	}
	if u, err := url.Parse(r.Addr); err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, cerr(fmt.Sprintf("address %q is not https://HOST[:PORT]", r.Addr), "re-add the remote with a plain https://HOST:PORT address")
	}
	r.clientCert, err = tls.LoadX509KeyPair(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	if err != nil {
		return nil, cerr("client certificate: "+err.Error(),
			"the incus client makes client.crt and client.key on first use: run 'incus remote add "+name+" "+r.Addr+"' (or 'incus remote list') once")
	}
	pinned := filepath.Join(dir, "servercerts", name+".crt")
	switch b, err := os.ReadFile(pinned); {
	case errors.Is(err, os.ErrNotExist):
		// A server with a certificate from a public CA: verified against the system's roots.
	case err != nil:
		return nil, cerr(err.Error(), "make "+pinned+" readable")
	default:
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, cerr(pinned+": not a PEM certificate", "re-accept the server's certificate: incus remote remove "+name+" && incus remote add "+name+" "+r.Addr)
		}
		if r.serverCert, err = x509.ParseCertificate(blk.Bytes); err != nil {
			return nil, cerr(pinned+": "+err.Error(), "re-accept the server's certificate: incus remote remove "+name+" && incus remote add "+name+" "+r.Addr)
		}
	}
	return r, nil
}

// CertMismatchError is a remote server whose certificate is not the one the incus
// client accepted for it: box refuses to talk to it.
type CertMismatchError struct {
	Remote string
	Addr   string
	Pinned string // the accepted certificate's path
	Want   string // SHA-256 fingerprints
	Got    string
}

func (e *CertMismatchError) Error() string {
	return fmt.Sprintf("remote %s (%s) presented certificate %s, not the one accepted for it (%s, %s): refused",
		e.Remote, e.Addr, short(e.Got), e.Pinned, short(e.Want))
}

// Hint says what to do when the change is legitimate.
func (e *CertMismatchError) Hint() string {
	return fmt.Sprintf("someone may be in the middle; if the server's certificate changed on purpose, check its fingerprint on the server ('incus info | grep -i fingerprint'), then re-accept it: incus remote remove %s && incus remote add %s %s",
		e.Remote, e.Remote, e.Addr)
}

func short(fp string) string {
	if len(fp) > 16 {
		return fp[:16] + "..."
	}
	return fp
}

// Fingerprint is a certificate's SHA-256 fingerprint in hex, as incus prints it.
func Fingerprint(der []byte) string {
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:])
}

// RemoteError is a request that did not reach a remote (or reached a server that was
// refused).
type RemoteError struct {
	Remote string
	Addr   string
	Err    error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("remote %s (%s): %v", e.Remote, e.Addr, e.Err)
}

func (e *RemoteError) Unwrap() error { return e.Err }

// Hint says how to find out why, unless the cause has its own.
func (e *RemoteError) Hint() string {
	var m *CertMismatchError
	if errors.As(e.Err, &m) {
		return m.Hint()
	}
	return fmt.Sprintf("is incusd listening there (core.https_address) and reachable from here? 'incus info %s:' checks with the incus client; 'incus remote list' shows the address", e.Remote)
}

// tlsConfig presents the client certificate and pins the server: with an accepted
// certificate, the server must present exactly it (incus servers are self-signed, so
// there is no chain to check, only identity); without one, the system's roots and the
// host name decide.
func (r *Remote) tlsConfig() (*tls.Config, error) {
	u, err := url.Parse(r.Addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{r.clientCert},
		ServerName:   u.Hostname(),
	}
	if r.serverCert == nil {
		return cfg, nil
	}
	pinned := r.serverCert.Raw
	cfg.InsecureSkipVerify = true // replaced by the exact comparison below
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &CertMismatchError{Remote: r.Name, Addr: r.Addr, Pinned: r.PinnedCert(), Want: Fingerprint(pinned), Got: "none"}
		}
		if got := cs.PeerCertificates[0].Raw; !bytes.Equal(got, pinned) {
			return &CertMismatchError{Remote: r.Name, Addr: r.Addr, Pinned: r.PinnedCert(), Want: Fingerprint(pinned), Got: Fingerprint(got)}
		}
		return nil
	}
	return cfg, nil
}

// NewRemote returns a client for an HTTPS remote (LoadRemote). Nothing is dialled
// until a request is made.
func NewRemote(r *Remote) (*Client, error) {
	if !r.HTTPS() {
		return nil, fmt.Errorf("remote %s: %s is not an https:// address", r.Name, r.Addr)
	}
	cfg, err := r.tlsConfig()
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(r.Addr)
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "8443") // incus's default port
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 8,
		// Under incusd's own IdleTimeout (30 s): a connection it is closing as idle
		// is never picked for a request (a file push could not be replayed).
		IdleConnTimeout:   20 * time.Second,
		ForceAttemptHTTP2: false,
	}
	ws := &websocket.Dialer{
		NetDialContext:   dialer.DialContext,
		TLSClientConfig:  cfg,
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   32 << 10,
		WriteBufferSize:  32 << 10,
	}
	c := &Client{remote: r, base: "https://" + host, http: &http.Client{Transport: tr}, ws: ws}
	if r.Project != "default" {
		c.Project = r.Project
	}
	return c, nil
}

// Untrusted reports whether err is a remote's answer that it does not trust box's
// client certificate (403).
func Untrusted(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusForbidden
}

// Auth is GET /1.0's view of this client: "trusted" or "untrusted".
func (c *Client) Auth(ctx context.Context) (string, error) {
	var s struct {
		Auth string `json:"auth"`
	}
	if _, err := c.get(ctx, "", nil, &s); err != nil {
		return "", err
	}
	return s.Auth, nil
}
