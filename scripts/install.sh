#!/usr/bin/env bash
# Install box on Debian 12: its runtime dependencies, then the binary to $PREFIX/bin
# (default /usr/local). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
gocmd=$(scripts/deps.sh | tail -n 1)
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
CGO_ENABLED=0 env $gocmd build -trimpath -ldflags "-s -w -X main.version=$version" -o "$PREFIX/bin/box" ./cmd/box
echo "installed $PREFIX/bin/box ($version)" >&2
