package lab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Names of the fake internet. Every name in InternetNames is a virtual host of Internet,
// over HTTP (port 80) and HTTPS (443, a certificate from the lab's own CA, CAFile). LANName
// and MetadataName are internet names whose DNS answer is the LAN host and the metadata
// address: the DNS-rebinding targets.
var (
	InternetNames = []string{InternetName, "allowed.test", "api.allowed.test", "denied.test"}
	LANName       = "lan.test"
	// LANPublicName answers LANHostPublic: rebinding into the host's public subnet.
	LANPublicName = "publan.test"
	MetadataName  = "metadata.test"
	// SearchName is a name under allowed.test that does not exist; SearchName +"."+
	// SearchDomain does, as SearchHost.
	SearchName   = "nx.allowed.test"
	SearchDomain = "corp.test"
)

// Ports of the fake internet besides HTTP.
const (
	HTTPSPort = 443
	EchoPort  = 7 // UDP echo: a reply means UDP left the sandbox
)

// hostRecords are dnsmasq's --host-record values.
func hostRecords() []string {
	var out []string
	for _, n := range InternetNames {
		out = append(out, "--host-record="+n+","+Internet.String())
	}
	return append(out, "--host-record="+LANName+","+LANHost.String(), "--host-record="+LANPublicName+","+LANHostPublic.String(),
		"--host-record="+SearchName+"."+SearchDomain+","+SearchHost.String(), "--host-record="+MetadataName+","+Metadata.String(),
		"--host-record="+VPNName+","+VPNAddr.String())
}

// serveInternet runs the fake internet: "/" answers InternetBody on every name, "/bytes?n=N"
// streams N zero bytes (for benchmarks), anything else is a file under WWW (a dumb-HTTP
// git repository, say); HTTP, HTTPS and the UDP echo.
func (l *Lab) serveInternet() error {
	l.WWW = filepath.Join(l.Dir, "www")
	if err := os.MkdirAll(l.WWW, 0o755); err != nil {
		return err
	}
	files := http.FileServer(http.Dir(l.WWW))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Boxlab-Host", r.Host)
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, InternetBody)
		case "/bytes":
			n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			zero := make([]byte, 256<<10)
			for n > 0 {
				k, err := w.Write(zero[:min(n, int64(len(zero)))])
				if err != nil {
					return
				}
				n -= int64(k)
			}
		default:
			files.ServeHTTP(w, r)
		}
	})
	cert, err := l.makeCA()
	if err != nil {
		return err
	}
	for _, tlsOn := range []bool{false, true} {
		port := HTTPPort
		if tlsOn {
			port = HTTPSPort
		}
		ln, err := Listen(l.NSPath(RoleInet), "tcp", netip.AddrPortFrom(Internet, uint16(port)).String())
		if err != nil {
			return err
		}
		if tlsOn {
			ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		l.addCloser(srv.Close)
	}
	var pc net.PacketConn
	err = InNetns(l.NSPath(RoleInet), func() (err error) {
		pc, err = net.ListenPacket("udp", netip.AddrPortFrom(Internet, EchoPort).String())
		return err
	})
	if err != nil {
		return fmt.Errorf("udp echo: %w", err)
	}
	l.addCloser(pc.Close)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	return nil
}

// makeCA makes the lab's CA (CAFile, world-readable) and a certificate for every
// internet name signed by it.
func (l *Lab) makeCA() (tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "boxlab test CA " + l.ID},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	l.CAFile = filepath.Join(l.Dir, "ca.pem")
	if err := os.WriteFile(l.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: InternetName},
		DNSNames:  append(append([]string{}, InternetNames...), LANName, MetadataName),
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// RepoBody is the README of the repository GitRepo makes.
const RepoBody = "boxlab repo\n"

// GitRepo makes a git repository with one commit (a README holding RepoBody) that the
// fake internet serves over dumb HTTP and HTTPS at /NAME.git, on every internet name.
func (l *Lab) GitRepo(ctx context.Context, name string) error {
	work, err := os.MkdirTemp(l.Dir, "repo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bare := filepath.Join(l.WWW, name+".git")
	git := func(dir string, args ...string) error {
		return run(ctx, "git", append([]string{"-C", dir, "-c", "user.name=boxlab", "-c", "user.email=boxlab@example.test",
			"-c", "init.defaultBranch=main"}, args...)...)
	}
	if err := git(work, "init", "-q"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "README"), []byte(RepoBody), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", "README"}, {"commit", "-qm", "one"}, {"clone", "-q", "--bare", work, bare}} {
		if err := git(work, args...); err != nil {
			return err
		}
	}
	return git(bare, "update-server-info")
}
