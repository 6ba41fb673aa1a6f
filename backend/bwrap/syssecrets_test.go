package bwrap

import (
	"slices"
	"testing"
)

// SecretKeys names the keys that look like credentials in the shapes the system files
// use (npmrc, pip.conf, nix.conf, /etc/environment, kubeconfig YAML, apt's netrc), and
// none of the harmless ones.
func TestSecretKeys(t *testing.T) {
	const in = `# npm
//registry.npmjs.org/:_authToken=npm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
registry=https://registry.npmjs.org/
[global]
index-url = https://user:s3cretpassw0rd@pypi.example/simple
access-tokens = github.com=ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
export GITHUB_TOKEN="abc123def456"
    client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUNm
    server: https://127.0.0.1:6443
machine apt.example login u password p4ss
`
	got := SecretKeys([]byte(in))
	want := []string{"//registry.npmjs.org/:_authToken", "index-url", "access-tokens", "GITHUB_TOKEN", "client-key-data", "password (netrc)"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretKeys = %q, want %q", got, want)
	}
}
