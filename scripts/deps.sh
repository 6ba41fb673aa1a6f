#!/usr/bin/env bash
# Install what box needs on Debian 12, idempotently: bubblewrap and the user-mode network
# helpers (what box run uses), nftables, and a Go toolchain that can build box.
# Prints the go command to use on its last line. Needs only Debian's mirror and the Go
# module proxy.
set -euo pipefail

need_pkgs=()
for pair in bwrap:bubblewrap pasta:passt slirp4netns:slirp4netns nft:nftables newuidmap:uidmap ip:iproute2 nsenter:util-linux; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || need_pkgs+=("${pair#*:}")
done
[ -x /usr/sbin/dnsmasq ] || dpkg -s dnsmasq-base >/dev/null 2>&1 || need_pkgs+=(dnsmasq-base)
command -v git >/dev/null 2>&1 || need_pkgs+=(git)
command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc libc6-dev)

# Go: box needs 1.26. A machine without it gets Debian's newest Go from bookworm-backports,
# which fetches the 1.26 toolchain from the Go module proxy on first use.
GO_WANT=go1.26.8
gobin=""
for g in go /usr/local/go/bin/go /usr/lib/go-1.2[3-9]/bin/go; do
	p=$(command -v "$g" 2>/dev/null) || continue
	v=$("$p" env GOVERSION 2>/dev/null || true)
	case "$v" in go1.2[6-9]*|go1.[3-9]*) gobin=$p; break ;; esac
	case "$v" in go1.2[1-5]*) gobin=$p; export GOTOOLCHAIN=$GO_WANT; break ;; esac
done

add_backports() {
	local src=/etc/apt/sources.list.d/debian.sources bp=/etc/apt/sources.list.d/box-bookworm-backports.sources uri key
	[ -f "$bp" ] && return 0
	uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$src" 2>/dev/null || true)
	key=$(awk '/^Signed-By:/ {print $2; exit}' "$src" 2>/dev/null || true)
	printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
		"${uri:-http://deb.debian.org/debian}" "${key:-/usr/share/keyrings/debian-archive-keyring.gpg}" >"$bp"
}

export DEBIAN_FRONTEND=noninteractive
if [ ${#need_pkgs[@]} -gt 0 ] || [ -z "$gobin" ]; then
	[ -n "$gobin" ] || add_backports
	apt-get update -qq >&2 || echo "deps: apt-get update reported errors; going on with the lists it has" >&2
	[ ${#need_pkgs[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2
	if [ -z "$gobin" ]; then
		apt-get install -y -qq --no-install-recommends -t bookworm-backports golang-1.23-go ca-certificates >&2
		gobin=/usr/lib/go-1.23/bin/go
		export GOTOOLCHAIN=$GO_WANT
	fi
fi
echo "${GOTOOLCHAIN:+GOTOOLCHAIN=$GOTOOLCHAIN }$gobin"
