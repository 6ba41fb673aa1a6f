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
# The ports tests serve from inside a sandbox with python3 -m http.server.
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The keyring tests add a key to a session keyring on the host and look for it inside.
command -v keyctl >/dev/null 2>&1 || need+=(keyutils)
[ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
# The ssh-agent filter's live test runs Debian's sshd (two instances, in the lab's
# namespaces only) and the real ssh, ssh-agent, ssh-add and ssh-keygen.
[ -x /usr/sbin/sshd ] && command -v ssh-agent >/dev/null 2>&1 || need+=(openssh-server openssh-client)
# box setup-userns's profile is compiled by apparmor_parser (never loaded: see below).
command -v apparmor_parser >/dev/null 2>&1 || need+=(apparmor)
export DEBIAN_FRONTEND=noninteractive
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq >&2 || echo "test-deps: apt-get update reported errors; going on with the lists it has" >&2
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
	# The tests start their own sshd in the lab's namespaces; the package's own service
	# (started where the machine runs systemd) must not listen on the machine's network.
	if [[ " ${need[*]} " == *" openssh-server "* ]] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now ssh.service ssh.socket >&2 2>/dev/null || true
	fi
fi

# Debian 12's apparmor_parser (3.0.8) predates the userns rule. host's profile test
# compiles with Debian 13's (4.x), unpacked with Debian 13's libc under
# /opt/box-test/apparmor4 (its own loader: nothing of the system is replaced), fetched
# with apt-get through a private state directory so the system's sources stay as they are.
aa=/opt/box-test/apparmor4
if [ ! -x $aa/apparmor_parser ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$tmp/sources.list"
	o=(-o Dir::State="$tmp" -o Dir::State::status=/var/lib/dpkg/status -o Dir::Etc::SourceList="$tmp/sources.list"
		-o Dir::Etc::SourceParts=/dev/null -o Dir::Cache="$tmp/cache" -o APT::Sandbox::User=root)
	apt-get "${o[@]}" update -qq >&2
	(cd "$tmp" && apt-get "${o[@]}" download apparmor libc6 >&2)
	mkdir -p $aa.new
	for d in "$tmp"/*.deb; do dpkg -x "$d" $aa.new/root; done
	cat >$aa.new/apparmor_parser <<SH
#!/bin/sh
# Debian 13's apparmor_parser with its own libc; its profiles' includes from its own tree.
exec $aa/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path $aa/root/usr/lib/x86_64-linux-gnu \
	$aa/root/usr/sbin/apparmor_parser --base $aa/root/etc/apparmor.d "\$@"
SH
	chmod 755 $aa.new/apparmor_parser
	rm -rf $aa && mv $aa.new $aa
fi
