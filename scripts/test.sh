#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need (idempotently), then
# vet, the unit tests, the real sandbox and lab tests, and the fuzz seeds. Run as root on
# Debian 12: real tests create an unprivileged user and network namespaces of their own.
set -euo pipefail
cd "$(dirname "$0")/.."
gocmd=$(scripts/deps.sh | tail -n 1)
for s in scripts/incus-install.sh scripts/test-deps.sh; do [ -x "$s" ] && "$s"; done
export CI=${CI:-true}   # in this suite nothing real may be skipped
# The labs' incusd, dnsmasq and their containers' systemd each take inotify instances;
# Debian's default of 128 per user runs out when test packages run side by side.
if [ "$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 1024)" -lt 1024 ]; then
	sysctl -qw fs.inotify.max_user_instances=1024 || echo "test: could not raise fs.inotify.max_user_instances" >&2
fi
env $gocmd vet ./...
# The Incus labs' container images (debootstrap, minutes each), built once and cached by
# recipe before the tests, so no test's own deadline covers a build and test packages
# running side by side do not wait on each other's.
env $gocmd run ./drill/incuslab/cmd/box-test-image >/dev/null
# The live tests sit in the packages they prove (backend/bwrap, backend/vm, host, drill),
# so go test runs two of them side by side: their labs, namespaces, cgroups and temp
# directories are named per process, the test user is made race-free, and the tests that
# need the nix daemon take a machine-wide lock (internal/testenv).
env $gocmd test -count=1 -timeout 60m ./... "$@"
