#!/usr/bin/env bash
# What the tests need beyond scripts/deps.sh, idempotently, on Debian 12:
# nix-bin (nix-instantiate parses flake.nix; `nix hash path` computes its vendorHash)
# make (the Makefile's install and uninstall) and bash-completion (a real bash loads the
# installed completion script). Only Debian's mirror is used.
set -euo pipefail
need=()
command -v nix-instantiate >/dev/null 2>&1 && command -v nix >/dev/null 2>&1 || need+=(nix-bin)
command -v make >/dev/null 2>&1 || need+=(make)
# The real sandbox tests probe the lab with curl from inside a sandbox; ps explains a failure.
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
command -v ps >/dev/null 2>&1 || need+=(procps)
# The keyring tests add a key to a session keyring on the host and look for it inside.
command -v keyctl >/dev/null 2>&1 || need+=(keyutils)
[ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
[ ${#need[@]} -eq 0 ] && exit 0
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || echo "test-deps: apt-get update reported errors; going on with the lists it has" >&2
apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
