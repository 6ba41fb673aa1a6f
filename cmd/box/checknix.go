package main

import (
	"os"
	"path/filepath"

	"github.com/heavy-duty/box/backend/bwrap"
)

// nixCheck: whether a profile's Nix keys can work here. nix = "store" is tried for real
// (box's helper layers a throwaway store and runs true). Not fatal: only profiles that
// set the keys need it.
func nixCheck() checkResult {
	r := checkResult{name: "nix"}
	if fi, err := os.Stat("/nix/store"); err != nil || !fi.IsDir() {
		r.ok, r.detail = true, "no /nix/store on this host: the profile keys packages and nix = \"store\" need Nix"
		return r
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err == nil {
		err = bwrap.NixStoreTrial(self)
	}
	if err != nil {
		r.detail = "nix = \"store\" cannot run here: " + err.Error()
		r.fix = "it needs unprivileged user namespaces with overlayfs (Linux 5.11 or later); use nix = \"none\" meanwhile"
		return r
	}
	r.ok, r.detail = true, "/nix/store read-only inside; nix = \"store\" usable (a store layered over the host's, tried)"
	return r
}
