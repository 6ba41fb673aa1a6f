package host

// The host facts box grant and box revoke act on: the local user, incus-user's socket
// and its group, and the user's directory of incus-user (INCUS_DIR/users/UID), whose
// certificate incus-user presents to incusd for the user. Read here, passed on as fields.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"golang.org/x/sys/unix"
)

// Grantee is a local user box grant/revoke acts on, with the host facts around them.
type Grantee struct {
	Name      string
	UID, GID  int
	Groups    []string // the user's supplementary group ids (the group database)
	IncusDir  string   // incusd's directory (INCUS_DIR)
	Socket    string   // incus-user's socket
	SockGroup string   // the socket's group: membership opens it
	SockGID   string
	UserDir   string // INCUS_DIR/users/UID: incus-user's record of the user
}

func (g *Grantee) Project() string  { return GrantProject(g.UID) }
func (g *Grantee) CertName() string { return GrantCertName(g.UID) }
func (g *Grantee) certPath() string { return filepath.Join(g.UserDir, "client.crt") }
func (g *Grantee) keyPath() string  { return filepath.Join(g.UserDir, "client.key") }

// InSuppGroup: the socket's group is one of the user's supplementary groups (the one
// membership box grant adds and box revoke removes).
func (g *Grantee) InSuppGroup() bool {
	return g.SockGID != "" && strconv.Itoa(g.GID) != g.SockGID && slices.Contains(g.Groups, g.SockGID)
}

func (g *Grantee) InSockGroup() bool {
	return g.SockGID != "" && (strconv.Itoa(g.GID) == g.SockGID || slices.Contains(g.Groups, g.SockGID))
}

// LookupGrantee reads the user and the host facts around incusDir. A missing user is a
// usage error; root needs no grant.
func LookupGrantee(name, incusDir string) (*Grantee, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, errs.Usage("name a local account (getent passwd NAME)", "no such user: %s", name)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 {
		return nil, errs.Usage("root reaches incusd's own socket: grant an unprivileged user", "%s is root: a grant confines an unprivileged user", name)
	}
	groups, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of %s: %w", name, err)
	}
	return GranteeOf(u.Username, uid, gid, groups, incusDir), nil
}

// GranteeOf is the grantee of an account, with the host facts read around it (gid -1
// and no groups: an account that is gone).
func GranteeOf(name string, uid, gid int, groups []string, incusDir string) *Grantee {
	g := &Grantee{Name: name, UID: uid, GID: gid, Groups: groups, IncusDir: incusDir}
	g.Socket = filepath.Join(g.IncusDir, UserSocket)
	g.UserDir = filepath.Join(g.IncusDir, "users", strconv.Itoa(uid))
	if st, err := os.Stat(g.Socket); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			g.SockGID = strconv.Itoa(int(sys.Gid))
			g.SockGroup = g.SockGID
			if gr, err := user.LookupGroupId(g.SockGID); err == nil {
				g.SockGroup = gr.Name
			}
		}
	}
	return g
}

// ErrNoUserSocket: incus-user does not listen here, so no user can be granted.
var ErrNoUserSocket = errors.New("incus-user's socket is not there")

func (g *Grantee) needSocket() error {
	if g.SockGID == "" {
		return errs.WithHint(fmt.Errorf("%s: %w", g.Socket, ErrNoUserSocket),
			"start incus-user, the daemon the restricted tier rides (systemctl enable --now incus-user.socket, or /usr/libexec/incus/incus-user --group incus)")
	}
	return nil
}

// userCert reads the user's certificate from incus-user's directory (nil when there is
// none: a fresh user, or one revoked).
func (g *Grantee) userCert() ([]byte, error) {
	b, err := os.ReadFile(g.certPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// writeUserCert gives the user a new certificate in incus-user's directory (0700, root's:
// incus-user reads it, the user never holds the key).
func (g *Grantee) writeUserCert() ([]byte, error) {
	crt, key, err := incus.NewClientCert("box grant " + g.Name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(g.UserDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(g.keyPath(), key, 0o600); err != nil {
		return nil, err
	}
	return crt, os.WriteFile(g.certPath(), crt, 0o600)
}

// dropUserCert removes the user's key and certificate but keeps their directory:
// incus-user sets up (loosely, on its own) any user without one, and with an empty one
// it refuses the connection.
func (g *Grantee) dropUserCert() error {
	if err := os.MkdirAll(g.UserDir, 0o700); err != nil {
		return err
	}
	for _, p := range []string{g.certPath(), g.keyPath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// setSockGroup adds the user to (add) or removes them from the socket's group, with
// gpasswd (the shadow suite's tool: /etc/group and /etc/gshadow stay consistent).
func (g *Grantee) setSockGroup(add bool) error {
	flag := "-d"
	if add {
		flag = "-a"
	}
	var out bytes.Buffer
	cmd := exec.Command("gpasswd", flag, g.Name, g.SockGroup)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gpasswd %s %s %s: %v: %s", flag, g.Name, g.SockGroup, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// touchIncusUser makes the user's first contact with incus-user, as the user, so that
// incus-user sets them up (the project user-UID, its certificate, its bridge): a
// project box made itself would be missing from incus-user's list of projects, read at
// its start, and incus-user would then set the user up again on every connection, fail
// and delete their certificate (measured, Incus 6.0.4). box grant converges the project
// right after; the user is not in the socket's group yet, so the loose project it
// starts as is out of their reach.
func (g *Grantee) touchIncusUser(ctx context.Context) error {
	conn, err := DialAs(g.Socket, g.UID, g.SockGID)
	if err != nil {
		return fmt.Errorf("connect to %s as %s: %w", g.Socket, g.Name, err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	} else {
		_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	if _, err := io.WriteString(conn, "GET /1.0 HTTP/1.1\r\nHost: unix.socket\r\nConnection: close\r\n\r\n"); err != nil {
		return fmt.Errorf("first contact with incus-user as %s: %w", g.Name, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return fmt.Errorf("first contact with incus-user as %s: no answer (%w): incus-user could not set them up", g.Name, err)
	}
	resp.Body.Close()
	return nil
}

// DialAs connects to a unix socket with the peer credentials of uid (and gid, the
// socket's group, for the permission to connect). Only one OS thread takes those
// credentials (setresuid/setresgid on it alone, not the process-wide syscall.Setuid),
// and it takes its own back before it is unlocked. Ending the goroutine locked is not
// enough: run on the main thread, which Go never retires but parks, the switch stayed,
// and the main thread is what /proc/PID shows (TestDialAsLeavesTheProcessItsCredentials).
// A thread that cannot switch back stays locked (Go retires any other thread with its
// goroutine) and the dial is refused.
func DialAs(sock string, uid int, gid string) (net.Conn, error) {
	g, err := strconv.Atoi(gid)
	if err != nil {
		return nil, fmt.Errorf("group id %q: %w", gid, err)
	}
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		keep := ^uintptr(0) // -1: leave that id as it is
		set := func(nr uintptr, id int) error {
			if _, _, e := unix.RawSyscall(nr, keep, uintptr(id), keep); e != 0 {
				return e
			}
			return nil
		}
		euid, egid := unix.Geteuid(), unix.Getegid()
		// back returns the thread to box's own ids (uid first: it is what may set the gid
		// back) and unlocks it, or leaves it locked and says why.
		back := func() error {
			if err := set(unix.SYS_SETRESUID, euid); err != nil {
				return fmt.Errorf("setresuid back to %d: %w", euid, err)
			}
			if err := set(unix.SYS_SETRESGID, egid); err != nil {
				return fmt.Errorf("setresgid back to %d: %w", egid, err)
			}
			runtime.UnlockOSThread()
			return nil
		}
		if err := set(unix.SYS_SETRESGID, g); err != nil {
			if berr := back(); berr != nil {
				err = errors.Join(err, berr)
			}
			ch <- res{nil, fmt.Errorf("setresgid: %w", err)}
			return
		}
		if err := set(unix.SYS_SETRESUID, uid); err != nil {
			if berr := back(); berr != nil {
				err = errors.Join(err, berr)
			}
			ch <- res{nil, fmt.Errorf("setresuid: %w", err)}
			return
		}
		c, err := net.Dial("unix", sock)
		if berr := back(); berr != nil {
			if c != nil {
				c.Close()
			}
			c, err = nil, berr
		}
		ch <- res{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
