package bwrap_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"golang.org/x/sys/unix"
)

// Without an IPC namespace a System V shared memory segment of the user's (an X client's
// MIT-SHM image, a database's buffers) is the sandbox's to attach by its id, a small
// number: it read and wrote one (hostile review, session 8). The Landlock mode refuses
// System V IPC.
func TestLandlockSysvIPCRefused(t *testing.T) {
	w := landlockWorld(t)
	const secret = "HOST-SHM-SECRET-7d1f"
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	boxtest.Must(t, err)
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	var desc unix.SysvShmDesc
	_, err = unix.SysvShmCtl(id, unix.IPC_STAT, &desc)
	boxtest.Must(t, err)
	desc.Perm.Uid, desc.Perm.Gid = uint32(w.UID), uint32(w.GID) // the user's own segment
	_, err = unix.SysvShmCtl(id, unix.IPC_SET, &desc)
	boxtest.Must(t, err)
	b, err := unix.SysvShmAttach(id, 0, 0)
	boxtest.Must(t, err)
	copy(b, secret)
	boxtest.Must(t, unix.SysvShmDetach(b))

	// perl's shmread attaches the segment (shmat) and copies it out.
	probe := `perl -e 'my $v; if (shmread(` + strconv.Itoa(id) + `, $v, 0, 20)) { print "READ:$v\n" } else { print "REFUSED:$!\n" }'`
	r := w.Run("run", "-p", "ll", "-y", "-q", "--isolation", "landlock", "--", "sh", "-c", probe)
	t.Logf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if strings.Contains(r.Stdout, secret) {
		t.Fatalf("the Landlock mode's sandbox read the user's SysV shared memory segment %d:\n%s", id, r.Stdout)
	}
	if !strings.Contains(r.Stdout, "REFUSED:Operation not permitted") {
		t.Errorf("want shmat refused with EPERM:\n%s%s", r.Stdout, r.Stderr)
	}
}
