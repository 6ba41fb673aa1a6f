package inet

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// fdHandoff is the unix socket on which the allowlist setup helper hands the listening
// sockets it made inside the sandbox's netns back to box (after userns, netns and exe).
const fdHandoff = 6

// allowSetup is the helper's half of the allowlist tier, run by filterMain with
// -allowlist inside the sandbox's netns as its user namespace's root: it gives lo the
// sandbox's address and a default route, installs the table read from stdin, opens the
// proxy's TCP listener and the DNS socket on loopback, and sends both to box over
// fdHandoff. The sandboxed command has not started yet; once this exits, box holds the
// only descriptors of those sockets.
func allowSetup(stdin io.Reader) error {
	var t Table
	if err := json.NewDecoder(stdin).Decode(&t); err != nil {
		return fmt.Errorf("read table: %w", err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := addrAndRoute(lo.Index, lo.Flags&net.FlagUp == 0); err != nil {
		return err
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	if err := ApplyTable(c, t); err != nil {
		return err
	}
	if err := VerifyTable(c, t); err != nil {
		return err
	}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: Loopback.AsSlice(), Port: ProxyPort})
	if err != nil {
		return fmt.Errorf("proxy listener: %w", err)
	}
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: Loopback.AsSlice(), Port: DNSPort})
	if err != nil {
		return fmt.Errorf("dns socket: %w", err)
	}
	lf, err := ln.File()
	if err != nil {
		return err
	}
	pf, err := pc.File()
	if err != nil {
		return err
	}
	rights := unix.UnixRights(int(lf.Fd()), int(pf.Fd()))
	if err := unix.Sendmsg(fdHandoff, []byte("ok"), rights, nil, 0); err != nil {
		return fmt.Errorf("hand the sockets to box: %w", err)
	}
	return nil
}

// addrAndRoute brings lo (index) up when it is down (bwrap --unshare-net has), puts
// LocalAddr/32 on it and a default route through it from that address, with rtnetlink
// (no ip(8)).
func addrAndRoute(index int, up bool) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return fmt.Errorf("rtnetlink: %w", err)
	}
	defer c.Close()
	local := LocalAddr.As4()
	flags := netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl
	if up {
		// struct ifinfomsg: family, pad, type, index, flags, change.
		ifi := make([]byte, 16)
		binary.NativeEndian.PutUint32(ifi[4:], uint32(index))
		binary.NativeEndian.PutUint32(ifi[8:], unix.IFF_UP)
		binary.NativeEndian.PutUint32(ifi[12:], unix.IFF_UP)
		if _, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWLINK, Flags: netlink.Request | netlink.Acknowledge},
			Data: ifi}); err != nil {
			return fmt.Errorf("bring lo up: %w", err)
		}
	}

	// struct ifaddrmsg: family, prefixlen, flags, scope, index.
	ifa := []byte{unix.AF_INET, 32, 0, unix.RT_SCOPE_UNIVERSE, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(ifa[4:], uint32(index))
	attrs, err := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: unix.IFA_LOCAL, Data: local[:]}, {Type: unix.IFA_ADDRESS, Data: local[:]},
	})
	if err != nil {
		return err
	}
	if _, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWADDR, Flags: flags},
		Data: append(ifa, attrs...)}); err != nil {
		return fmt.Errorf("add %v to lo: %w", LocalAddr, err)
	}

	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
	rtm := []byte{unix.AF_INET, 0, 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_LINK, unix.RTN_UNICAST, 0, 0, 0, 0}
	oif := make([]byte, 4)
	binary.NativeEndian.PutUint32(oif, uint32(index))
	attrs, err = netlink.MarshalAttributes([]netlink.Attribute{
		{Type: unix.RTA_OIF, Data: oif}, {Type: unix.RTA_PREFSRC, Data: local[:]},
	})
	if err != nil {
		return err
	}
	if _, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWROUTE, Flags: flags},
		Data: append(rtm, attrs...)}); err != nil {
		return fmt.Errorf("add the default route through lo: %w", err)
	}
	return nil
}

// receiveSockets reads the helper's two descriptors from the handoff socket: the proxy's
// listener and the DNS socket, both living in the sandbox's netns.
func receiveSockets(sock *os.File) (net.Listener, net.PacketConn, error) {
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("receive the sockets: %w", err)
	}
	if string(buf[:n]) != "ok" {
		return nil, nil, errors.New("the setup helper handed over no sockets")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, nil, fmt.Errorf("receive the sockets: bad control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, nil, fmt.Errorf("receive the sockets: want 2 descriptors, got %d (%v)", len(fds), err)
	}
	lf, pf := os.NewFile(uintptr(fds[0]), "proxy"), os.NewFile(uintptr(fds[1]), "dns")
	defer lf.Close()
	defer pf.Close()
	ln, err := net.FileListener(lf)
	if err != nil {
		return nil, nil, err
	}
	pc, err := net.FilePacketConn(pf)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, pc, nil
}

// socketpair returns a connected pair of unix stream sockets (close-on-exec).
func socketpair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "handoff"), os.NewFile(uintptr(fds[1]), "handoff-helper"), nil
}

// originalDst is the destination a redirected connection was sent to (SO_ORIGINAL_DST,
// from the sandbox netns's conntrack); ok is false for a connection made to the proxy's
// own address.
func originalDst(c net.Conn) (addr [4]byte, port uint16, ok bool) {
	tc, isTCP := c.(*net.TCPConn)
	if !isTCP {
		return addr, 0, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return addr, 0, false
	}
	var mreq *unix.IPv6Mreq
	var gerr error
	rc.Control(func(fd uintptr) {
		// SO_ORIGINAL_DST returns a sockaddr_in; IPv6Mreq is a 20-byte buffer that fits it.
		mreq, gerr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
	})
	if gerr != nil || mreq == nil {
		return addr, 0, false
	}
	raw := mreq.Multiaddr
	if binary.NativeEndian.Uint16(raw[0:2]) != syscall.AF_INET {
		return addr, 0, false
	}
	port = binary.BigEndian.Uint16(raw[2:4])
	copy(addr[:], raw[4:8])
	if addr == Loopback.As4() && port == ProxyPort {
		return addr, port, false
	}
	return addr, port, true
}
