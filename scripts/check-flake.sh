#!/usr/bin/env bash
# CI's check of flake.nix without a Nix build (no binary cache or source downloads here):
#   1. it parses (nix-instantiate --parse: syntax and undefined variables);
#   2. its vendorHash is the NAR hash of `go mod vendor` (scripts/vendorhash.sh).
# On a mismatch it prints the right value and how to write it. Needs nix-bin and go.
#   scripts/check-flake.sh [--flake FILE]
set -euo pipefail
# Debian's nix-bin, used only to parse and hash: no build users, no daemon.
export NIX_CONFIG="build-users-group =${NIX_CONFIG:+
$NIX_CONFIG}"
root=$(cd "$(dirname "$0")/.." && pwd)
flake=$root/flake.nix
case "${1:-}" in
--flake) flake=${2:?--flake needs a file} ;;
"") ;;
*) echo "usage: $0 [--flake FILE]" >&2; exit 2 ;;
esac
command -v nix-instantiate >/dev/null || { echo "check-flake: no nix-instantiate; apt-get install nix-bin" >&2; exit 1; }

nix-instantiate --parse "$flake" >/dev/null || { echo "check-flake: $flake does not parse" >&2; exit 1; }
echo "check-flake: $flake parses" >&2

have=$(sed -n 's/^[[:space:]]*vendorHash = "\(sha256-[A-Za-z0-9+/=]*\)";.*/\1/p' "$flake")
[ "$(printf '%s\n' "$have" | grep -c .)" = 1 ] || { echo "check-flake: $flake: want exactly one line 'vendorHash = \"sha256-...\";'" >&2; exit 1; }
want=$("$root/scripts/vendorhash.sh")
if [ "$have" != "$want" ]; then
	echo "check-flake: $flake: vendorHash is $have, but go mod vendor hashes to $want" >&2
	echo "check-flake: fix: scripts/vendorhash.sh --write --flake $flake  (or set vendorHash = \"$want\";)" >&2
	exit 1
fi
echo "check-flake: vendorHash $have matches go mod vendor" >&2
