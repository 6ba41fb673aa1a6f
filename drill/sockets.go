package drill

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"time"
)

// KindUnixPath: the inside connects to the unix socket at Targets[0], bound on the host
// by the drill before the launch = seen. The socket is absent, or does not listen: an
// error (the row would otherwise pass for nothing).
const KindUnixPath Kind = "unix-path"

// unixMarkerName is the drill's own host socket under the working directory: where a
// tmux, dev server or database socket kept in a project sits.
func unixMarkerName(workdir, nonce string) string {
	return filepath.Join(workdir, ".box-drill-sock-"+nonce)
}

// unixPathProbe is the row for a host unix socket under the working directory: a path
// socket binds to an inode, not a network namespace, so only box's mediation keeps the
// sandbox from it, at every tier.
func unixPathProbe(in Input) Probe {
	return Probe{ID: "net:unix-path", Group: "network", Name: "host unix socket in the working directory", Kind: KindUnixPath,
		Targets: []string{unixMarkerName(in.Workdir, in.Nonce)}, Want: Blocked, Expected: "unreachable"}
}

// StartUnixMarker listens on the drill's host socket in workdir, accepting (and closing)
// every connection, until the returned stop. A marker that cannot listen is a warning on
// w; the row then reports an error.
func StartUnixMarker(workdir, nonce string, w io.Writer) (stop func()) {
	l, err := net.Listen("unix", unixMarkerName(workdir, nonce))
	if err != nil {
		fmt.Fprintf(w, "box: warning: the drill's own unix socket: %v (the unix-path row cannot be judged)\n", err)
		return func() {}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return func() { l.Close() } // removes the socket file too
}

// probeUnixPath connects to the host's socket: connected = seen; refused by box
// (EACCES) or the kernel (EPERM) = not seen; anything else is an error.
func (r *runner) probeUnixPath(targets []string) (bool, string, error) {
	if len(targets) == 0 {
		return false, "", errors.New("no socket to probe")
	}
	c, err := net.DialTimeout("unix", targets[0], max(r.timeout, time.Second))
	if err == nil {
		c.Close()
		return true, "connected to " + targets[0], nil
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return false, "refused: " + err.Error(), nil
	}
	return false, "", err
}
