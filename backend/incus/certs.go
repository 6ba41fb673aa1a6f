package incus

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// NewClientCert makes a client certificate and key (PEM) the way the incus client does
// on first use: ECDSA P-384, self-signed, for client authentication, ten years.
func NewClientCert(commonName string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"box"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// ClientConfig is an incus client configuration directory to write: what 'incus
// remote add' leaves behind.
type ClientConfig struct {
	DefaultRemote string
	Remotes       map[string]RemoteSpec
	CertPEM       []byte // client.crt
	KeyPEM        []byte // client.key
}

// RemoteSpec is one remote of a ClientConfig.
type RemoteSpec struct {
	Addr    string
	Project string
	// ServerCertPEM is the accepted server certificate (servercerts/NAME.crt); nil
	// writes none.
	ServerCertPEM []byte
}

// Write writes the configuration into dir (config.yml, client.crt, client.key 0600,
// servercerts/), creating dir.
func (cc ClientConfig) Write(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "servercerts"), 0o700); err != nil {
		return err
	}
	var b strings.Builder
	def := cc.DefaultRemote
	if def == "" {
		def = LocalRemote
	}
	fmt.Fprintf(&b, "default-remote: %s\nremotes:\n", strconv.Quote(def))
	names := make([]string, 0, len(cc.Remotes))
	for n := range cc.Remotes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := cc.Remotes[n]
		project := r.Project
		if project == "" {
			project = "default"
		}
		fmt.Fprintf(&b, "  %s:\n    addr: %s\n    auth_type: tls\n    project: %s\n    protocol: incus\n    public: false\n",
			strconv.Quote(n), strconv.Quote(r.Addr), strconv.Quote(project))
		if r.ServerCertPEM != nil {
			if err := os.WriteFile(filepath.Join(dir, "servercerts", n+".crt"), r.ServerCertPEM, 0o644); err != nil {
				return err
			}
		}
	}
	b.WriteString("aliases: {}\n")
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(b.String()), 0o600); err != nil {
		return err
	}
	if cc.CertPEM != nil {
		if err := os.WriteFile(filepath.Join(dir, "client.crt"), cc.CertPEM, 0o644); err != nil {
			return err
		}
	}
	if cc.KeyPEM != nil {
		if err := os.WriteFile(filepath.Join(dir, "client.key"), cc.KeyPEM, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// TrustCertificate adds a client certificate (PEM) to the server's trust store (POST
// /1.0/certificates, type client). projects, when given, restricts it to those
// projects (a restricted certificate).
func (c *Client) TrustCertificate(ctx context.Context, name string, certPEM []byte, projects ...string) error {
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		return fmt.Errorf("trust certificate %q: not PEM", name)
	}
	body := map[string]any{
		"name": name, "type": "client",
		"certificate": base64.StdEncoding.EncodeToString(blk.Bytes),
		"restricted":  len(projects) > 0, "projects": projects,
	}
	if projects == nil {
		body["projects"] = []string{}
	}
	if err := c.Query(ctx, http.MethodPost, "/certificates", body, nil); err != nil {
		return fmt.Errorf("trust certificate %q: %w", name, err)
	}
	return nil
}
