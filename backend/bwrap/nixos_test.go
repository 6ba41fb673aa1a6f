package bwrap_test

// A NixOS-like host, built hermetically: in a private mount namespace, /usr/bin holds
// only env (and sh, a link into the store, as NixOS's /bin/sh is), /etc's certificates
// and resolver are links into /etc/static and on into the store, every tool (bwrap
// included) lives only in the store, and PATH names store paths. box runs there as the
// unprivileged user; nothing of it touches the host's own /usr, /etc or /nix.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/testenv"
)

// nixosRoot lays out the fake store and /etc under dir and returns the script that
// mounts them (run as root in a private mount namespace) and then runs CMD as the
// unprivileged user.
const nixosScript = `set -eu
R=$1; UID_=$2; GID_=$3; shift 3
S=$R/store
T=$S/0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a-tools/bin
E=$S/1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b-etc/etc
if [ ! -e "$R/laid-out" ]; then
mkdir -p "$T" "$E/ssl/certs" "$R/etc" "$R/usrbin" "$R/bin"
for t in sh cat ls id grep head env bwrap; do cp "$(command -v $t)" "$T/"; done
cp "$(command -v setpriv)" "$(command -v mount)" "$R/bin/"
printf 'nameserver 203.0.113.53\n' > "$E/resolv.conf"
printf 'FAKE NIXOS CA BUNDLE\n' > "$E/ssl/certs/ca-bundle.crt"
for f in passwd group hosts nsswitch.conf; do cp /etc/$f "$R/etc/"; done
ln -s "/nix/store/1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b-etc/etc" "$R/etc/static"
mkdir -p "$R/etc/ssl/certs"
ln -s /etc/static/ssl/certs/ca-bundle.crt "$R/etc/ssl/certs/ca-certificates.crt"
ln -s /etc/static/resolv.conf "$R/etc/resolv.conf"
cp /usr/bin/env "$R/usrbin/env"
ln -s /nix/store/0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a-tools/bin/sh "$R/usrbin/sh"
chown -R "$UID_:$GID_" "$S"
touch "$R/laid-out"
fi
M=$R/bin/mount
$M --make-rprivate /
mkdir -p /nix/store
$M --bind "$S" /nix/store
$M --bind "$R/etc" /etc
$M --bind "$R/usrbin" /usr/bin
exec "$R/bin/setpriv" --reuid="$UID_" --regid="$GID_" --clear-groups "$@"
`

func TestNixOSLikeHost(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range []string{"unshare", "setpriv", "bwrap"} {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	root := filepath.Join(filepath.Dir(w.home), "nixos")
	tools := "/nix/store/0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a-tools/bin"
	w.write(filepath.Join(w.home, ".config/box/profiles/nixos.toml"), `tools = ["grep", "head", "cat", "ls", "id"]
`)
	w.write(filepath.Join(w.home, ".config/box/profiles/store-rw.toml"), `[[mounts]]
path = "/nix/store"
mode = "rw"
`)
	run := func(args ...string) result {
		t.Helper()
		c := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", nixosScript, "nixos",
			root, strconv.Itoa(w.uid), strconv.Itoa(w.gid), "/usr/bin/env", "-i",
			"HOME=" + w.home, "PATH=" + tools, "LANG=C.UTF-8", w.box}, args...)...)
		c.Dir = w.proj
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code, o.String(), e.String()}
	}

	r := run("run", "-y", "--profile", "nixos", "--", "sh", "-c",
		`echo "PATH=$PATH"; echo $(ls /usr/bin); grep -c . /etc/ssl/certs/ca-certificates.crt; head -1 /etc/ssl/certs/ca-certificates.crt; cat /etc/resolv.conf; command -v grep; id -u`)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"FAKE NIXOS CA BUNDLE", "nameserver 203.0.113.53", "/run/box/bin/grep", strconv.Itoa(w.uid)} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inside a NixOS-like host: %q missing from\n%s\nstderr: %s", want, r.stdout, r.stderr)
		}
	}
	if fields := strings.Fields(strings.SplitN(r.stdout, "\n", 3)[1]); strings.Join(fields, " ") != "env sh" {
		t.Errorf("/usr/bin inside holds %v, want the host's env and sh", fields)
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Errorf("the host's /usr/bin was touched: %v", err)
	}

	// The drill there: the store is the user's own (a single-user Nix layout), so only
	// its read-only bind keeps the sandbox from planting into paths the host runs. Only
	// the nix group, the one judged.
	d := run("drill", "--backend", "bwrap", "--group", "nix", "--json")
	rows := parseRows(t, d)
	if got := rows["nix:store-write"]; got.Status != drill.Pass {
		t.Errorf("nix:store-write %s %q, want PASS\n%s", got.Status, got.Observed, d.stderr)
	}
	d = run("drill", "--backend", "bwrap", "--group", "nix", "--json", "--profile", "store-rw")
	rows = parseRows(t, d)
	if got := rows["nix:store-write"]; got.Status != drill.Breach || d.code != 1 {
		t.Errorf("store mounted rw: nix:store-write %s %q (exit %d), want BREACH\n%s", got.Status, got.Observed, d.code, d.stderr)
	}
}

func parseRows(t *testing.T, r result) map[string]drill.Result {
	t.Helper()
	dr := drillRun{stdout: r.stdout}
	if err := jsonUnmarshal(dr.stdout, &dr.list); err != nil {
		t.Fatalf("drill: exit %d, JSON: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	rows := map[string]drill.Result{}
	for _, x := range dr.list {
		rows[x.ID] = x
	}
	return rows
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
