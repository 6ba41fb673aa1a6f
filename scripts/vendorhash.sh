#!/usr/bin/env bash
# Prints the vendorHash that flake.nix needs: the NAR hash (SRI, sha256) of the vendor
# directory that `go mod vendor` writes, which is exactly what nixpkgs' buildGoModule
# hashes. Its goModules derivation runs `go mod vendor` in the source, then
# `cp -r vendor $out` with outputHashMode = "recursive": the NAR serialisation of that
# directory (modules.txt included), hashed with sha256.
#
#   scripts/vendorhash.sh                  print the hash
#   scripts/vendorhash.sh --write          ... and put it into flake.nix in place
#   scripts/vendorhash.sh --flake FILE     use FILE instead of the repository's flake.nix
#
# The source it vendors is what a flake build sees once the work is committed: the files
# git tracks plus the untracked ones it does not ignore (all files when this is not a git
# checkout). They are copied to a temporary directory first: `go mod vendor` may rewrite
# go.mod and go.sum, and it writes vendor/, and the shared work tree must stay untouched.
# Needs go (or $GO) and nix-bin's `nix`; modules come from the module cache or $GOPROXY.
set -euo pipefail
# Debian's nix-bin, used only to parse and hash: no build users, no daemon.
export NIX_CONFIG="build-users-group =${NIX_CONFIG:+
$NIX_CONFIG}"
root=$(cd "$(dirname "$0")/.." && pwd)
flake=$root/flake.nix
write=false
while [ $# -gt 0 ]; do
	case "$1" in
	--write) write=true ;;
	--flake) flake=${2:?--flake needs a file}; shift ;;
	*) echo "usage: $0 [--write] [--flake FILE]" >&2; exit 2 ;;
	esac
	shift
done
go=${GO:-go}
command -v "$go" >/dev/null || { echo "vendorhash: no go command ($go)" >&2; exit 1; }
command -v nix >/dev/null || { echo "vendorhash: no nix command; apt-get install nix-bin" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$root" ls-files -z --cached --others --exclude-standard |
		(cd "$root" && while IFS= read -r -d '' f; do
			case "$f" in vendor/*) continue ;; esac
			[ -f "$f" ] && printf '%s\0' "$f"
		done) |
		(cd "$root" && xargs -0 -r cp --parents -t "$tmp/src" --)
else
	tar -C "$root" --exclude=./.git --exclude=./vendor -cf - . | tar -C "$tmp/src" -xf -
fi

# As in the goModules derivation: modules on, local toolchain, no inherited GOFLAGS
# (-mod=vendor there would refuse to vendor), no workspace.
(
	cd "$tmp/src"
	env -u GOFLAGS GO111MODULE=on GOWORK=off GOFLAGS= "$go" mod vendor
) >&2
[ -n "$(ls -A "$tmp/src/vendor" 2>/dev/null)" ] || { echo "vendorhash: go mod vendor wrote nothing: set vendorHash = null" >&2; exit 1; }
hash=$(nix --extra-experimental-features nix-command hash path --type sha256 --sri "$tmp/src/vendor")
case "$hash" in sha256-*) ;; *) echo "vendorhash: unexpected output from nix hash path: $hash" >&2; exit 1 ;; esac

if $write; then
	n=$(grep -c '^[[:space:]]*vendorHash = "sha256-[A-Za-z0-9+/=]*";' "$flake" || true)
	[ "$n" = 1 ] || { echo "vendorhash: $flake: want exactly one line 'vendorHash = \"sha256-...\";', found $n" >&2; exit 1; }
	sed -i "s|^\([[:space:]]*vendorHash = \"\)sha256-[A-Za-z0-9+/=]*\(\";\)|\1$hash\2|" "$flake"
	echo "vendorhash: wrote $hash into $flake" >&2
fi
echo "$hash"
