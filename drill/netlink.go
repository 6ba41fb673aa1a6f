package drill

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// KindNetlinkAdmin: the inside asks the kernel, over rtnetlink, for a change only
// CAP_NET_ADMIN over its network namespace may make (an alias on its loopback), sending
// as iproute2 does (sendto naming the kernel's address) = seen when the kernel makes it.
// The command holds no capability there; box makes the sandbox's address-carrying sends
// itself, and the kernel checks such a send against the task that makes it, box, whose
// uid owns the namespace: box's CAP_NET_ADMIN was lent, and `ip link set lo down` went
// through (a hostile review's finding, session 11).
const KindNetlinkAdmin Kind = "netlink-admin"

// netlinkAdminProbe is the kernel group's row for it.
func netlinkAdminProbe() Probe {
	return Probe{ID: "kernel:netlink-admin", Group: "kernel", Name: "change the sandbox's network over rtnetlink (no CAP_NET_ADMIN)",
		Kind: KindNetlinkAdmin, Want: Blocked, Expected: "EPERM"}
}

// drillAlias is the alias the probe sets on the sandbox's loopback (and clears after).
const drillAlias = "box-drill"

// probeNetlinkAdmin sets drillAlias on lo: made = seen. No rtnetlink socket at all (the
// Landlock mode's filter refuses netlink) is not seen.
func probeNetlinkAdmin() (bool, string, error) {
	errno, err := setAlias(loopbackIndex, drillAlias)
	if err != nil {
		return false, "", err
	}
	switch errno {
	case 0:
		setAlias(loopbackIndex, "") // as it was
		return true, "the kernel set an alias on lo: a change only CAP_NET_ADMIN over the namespace may make", nil
	case unix.EPERM, unix.EACCES, unix.EAFNOSUPPORT:
		return false, "refused: " + unix.ErrnoName(errno), nil
	}
	return false, "", fmt.Errorf("rtnetlink answered %v", errno)
}

// loopbackIndex is lo's interface index in every network namespace (the kernel's
// LOOPBACK_IFINDEX: registered first).
const loopbackIndex = 1

// setAlias sends RTM_NEWLINK (IFLA_IFALIAS) for interface index to the kernel, with its
// address named, and returns the kernel's answer (0: made).
func setAlias(index int, alias string) (syscall.Errno, error) {
	body := make([]byte, unix.SizeofIfInfomsg)
	body[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(body[4:], uint32(index))
	return rtnetlink(unix.RTM_NEWLINK, 0, append(body, rtattr(unix.IFLA_IFALIAS, []byte(alias))...))
}

// rtnetlink sends one request (typ, with flags besides NLM_F_REQUEST|NLM_F_ACK) to the
// kernel, naming its address as iproute2 does, and returns the kernel's answer (0: made).
// No rtnetlink socket at all, or a send refused, is the refusal's errno.
func rtnetlink(typ, flags uint16, body []byte) (syscall.Errno, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if errno, ok := err.(syscall.Errno); ok && (errno == unix.EPERM || errno == unix.EACCES || errno == unix.EAFNOSUPPORT) {
		return errno, nil
	}
	if err != nil {
		return 0, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	ne := binary.NativeEndian
	total := unix.SizeofNlMsghdr + len(body)
	b := make([]byte, unix.SizeofNlMsghdr, total)
	ne.PutUint32(b[0:], uint32(total))
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|flags)
	ne.PutUint32(b[8:], 1) // sequence
	b = append(b, body...)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		if errors.Is(err, unix.EPERM) {
			return unix.EPERM, nil
		}
		return 0, fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("netlink answer: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 || msgs[0].Header.Type != unix.NLMSG_ERROR || len(msgs[0].Data) < 4 {
		return 0, fmt.Errorf("netlink answer not understood (%d bytes)", n)
	}
	return syscall.Errno(-int32(ne.Uint32(msgs[0].Data))), nil
}
