// Package packaging holds the tests of how box is packaged and installed: the Nix flake
// (it parses, its outputs are wired as intended, its vendorHash is the NAR hash of
// `go mod vendor`) and the Makefile (install and uninstall under a prefix).
//
// They need nix-bin, git, make and go. Without one a test skips with the reason; under
// CI=true it fails (scripts/test-deps.sh installs them).
package packaging
