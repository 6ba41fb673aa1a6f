package host

// What the host verbs need to know about the local incusd's client, so the CLI never
// names the Incus client itself.

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/heavy-duty/box/backend/incus"
)

// SystemSocket is where a packaged incusd listens (the system's own daemon).
const SystemSocket = incus.DefaultSocket

// IncusDir is the directory of the local incusd: $INCUS_DIR, else the directory of
// $INCUS_SOCKET, else /var/lib/incus.
func IncusDir(getenv func(string) string) string {
	if d := getenv("INCUS_DIR"); d != "" {
		return d
	}
	if s := getenv("INCUS_SOCKET"); s != "" {
		return filepath.Dir(s)
	}
	return filepath.Dir(incus.DefaultSocket)
}

// Unreached reports whether err says incusd was not reached at all: neither an answer of
// incusd's (an *incus.Error) nor a cancelled context.
func Unreached(err error) bool {
	var ie *incus.Error
	return !errors.As(err, &ie) && !errors.Is(err, context.Canceled)
}

// LocalClientOf is LocalClient of sock, made when asked (nothing is dialled before).
func LocalClientOf(sock string) func() *incus.Client {
	return func() *incus.Client { return LocalClient(sock) }
}
