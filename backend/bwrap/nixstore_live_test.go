package bwrap_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A Nix user evaluates the project's flake on the host first (nix develop, nix build),
// so the host's store already holds the flake's source when the agent builds inside
// with nix = "store". The build inside uses that path as it is, without rewriting it
// (it cannot: the host's files are not the sandbox's), and the host's store is as it was.
func TestNixStoreHostHeldSource(t *testing.T) {
	w, _ := nixWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/selfnix.toml"), `nix = "store"
`)
	g := filepath.Join(w.proj, "g")
	w.write(filepath.Join(g, "flake.nix"), `{
  outputs = { self }: {
    packages.x86_64-linux.pkg = derivation {
      name = "box-held-pkg"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin; printf '#!/bin/sh\\necho held source built\\n' > $out/bin/pkg; /bin/chmod +x $out/bin/pkg" ];
    };
  };
}
`)
	r := w.shell(`NIX_CONFIG='experimental-features = nix-command flakes' nix flake metadata path:` + g + ` 2>&1`)
	if r.code != 0 {
		t.Fatalf("host evaluation: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	store := storeListing(t)
	r = w.run("run", "-y", "--profile", "selfnix", "--", "sh", "-c", `nix build path:`+g+`#pkg -o result 2>&1 && ./result/bin/pkg`)
	if r.code != 0 || !strings.Contains(r.stdout, "held source built") {
		t.Errorf("build inside: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if after := storeListing(t); after != store {
		t.Errorf("the host's store changed:\nbefore:\n%s\nafter:\n%s", store, after)
	}
}
