package incuslab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// IncusUser is the daemon of the restricted tier (box grant): it listens on
// INCUS_DIR/unix.socket.user, tells users apart by their peer credentials and forwards
// each to incusd with that user's certificate.
const IncusUser = "/usr/libexec/incus/incus-user"

// StartIncusUser runs incus-user for the lab's daemon, its socket open to group. stop
// ends it (by its pid) and removes the socket.
func (l *Lab) StartIncusUser(ctx context.Context, group string) (socket string, stop func(), err error) {
	if _, err := os.Stat(IncusUser); err != nil {
		return "", nil, fmt.Errorf("incus-user: %w", err)
	}
	socket = filepath.Join(l.IncusDir, "unix.socket.user")
	logf, err := os.Create(filepath.Join(l.Dir, "incus-user.log"))
	if err != nil {
		return "", nil, err
	}
	defer logf.Close()
	cmd := exec.Command(IncusUser, "--group", group, "--verbose")
	cmd.Env = append(os.Environ(), "INCUS_DIR="+l.IncusDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start incus-user: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = os.Remove(socket)
	}
	// Ready when the socket is there (incus-user creates it once set up).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(socket); err == nil {
			return socket, stop, nil
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("incus-user exited during start-up:\n%s", tail(filepath.Join(l.Dir, "incus-user.log"), 2000))
		case <-ctx.Done():
			stop()
			return "", nil, errors.Join(ctx.Err(), errors.New(tail(filepath.Join(l.Dir, "incus-user.log"), 2000)))
		case <-tick.C:
		}
	}
}
