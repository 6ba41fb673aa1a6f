#!/usr/bin/env bash
# Install Incus 6.0.x (bookworm-backports; containers only) and debootstrap for the test lab.
# Idempotent: does nothing when everything is already present.
# Needs only the Debian mirror configured on the machine.
set -euo pipefail

have() {
	[ -x /usr/libexec/incus/incusd ] && command -v incus >/dev/null && command -v dnsmasq >/dev/null &&
		command -v debootstrap >/dev/null && command -v nft >/dev/null
}
if have; then exit 0; fi

src=/etc/apt/sources.list.d/debian.sources
bp=/etc/apt/sources.list.d/box-bookworm-backports.sources
if [ ! -f "$bp" ]; then
	# Same URI and keyring as the machine's main Debian source, so nothing new is reached.
	uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$src" 2>/dev/null || true)
	key=$(awk '/^Signed-By:/ {print $2; exit}' "$src" 2>/dev/null || true)
	uri=${uri:-http://deb.debian.org/debian}
	key=${key:-/usr/share/keyrings/debian-archive-keyring.gpg}
	cat >"$bp" <<SRC
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: $key
SRC
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# incus-base carries incusd and the client; the full "incus" package adds QEMU for VMs,
# which this kernel cannot run (no vhost_vsock), so the lab uses containers only.
# dnsmasq-base is only a Recommends of incus-base but bridges need it for DHCP.
apt-get install -y -qq --no-install-recommends -t bookworm-backports incus-base incus-client >/dev/null
apt-get install -y -qq --no-install-recommends dnsmasq-base debootstrap iproute2 util-linux nftables >/dev/null
have || { echo "incus-install: incusd, incus, dnsmasq, debootstrap or nft still missing" >&2; exit 1; }
