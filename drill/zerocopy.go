package drill

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// KindSendZerocopy: the inside makes a zero-copy send (MSG_ZEROCOPY on a TCP socket with
// SO_ZEROCOPY) that waits past its receiver's window, has box's heap turn over, and reads
// what arrived: a byte it never sent = seen. box makes the sandbox's sendmsg itself (the
// unix-socket mediation), from a buffer of its own; with the caller's MSG_ZEROCOPY passed
// on, the kernel pinned that buffer and sent it after box had freed and reused it, so box's
// memory reached the sandbox (a hostile review's finding, session 11).
const KindSendZerocopy Kind = "send-zerocopy"

// sendZerocopyProbe is the kernel group's row for it.
func sendZerocopyProbe() Probe {
	return Probe{ID: "kernel:send-zerocopy", Group: "kernel", Name: "box's memory through a zero-copy send", Kind: KindSendZerocopy,
		Want: Blocked, Expected: "only the sandbox's bytes arrive"}
}

// zcSize is the zero-copy send: far past the receiver's window, so most of it waits in
// the sender's queue on the pages it was sent from.
const zcSize = 256 << 10

// zcRounds bounds the sends made: whether box's freed buffer is reused before the
// kernel sends from it depends on when its heap turns over, and one round under a CI's
// load missed it with the protection off (session 18). A refused send ends the probe at
// the first round.
const zcRounds = 4

// probeSendZerocopy: seen when a byte arrives that a send did not carry, in any of
// zcRounds rounds.
func probeSendZerocopy() (seen bool, detail string, err error) {
	for round := 1; round <= zcRounds; round++ {
		var made bool
		seen, made, detail, err = sendZerocopyRound()
		if seen || !made || err != nil {
			return seen, detail, err
		}
	}
	return false, fmt.Sprintf("%s (in each of %d rounds)", detail, zcRounds), nil
}

// sendZerocopyRound makes one zero-copy send and reads what arrived: made says the send
// was made and read whole, nothing foreign in it (another round may tell more).
func sendZerocopyRound() (seen, made bool, detail string, err error) {
	ls, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		// No TCP at all (the Landlock mode's filter at tier none): no send to make.
		return false, false, "no TCP socket can be made (" + errnoName(err) + ")", nil
	}
	if err != nil {
		return false, false, "", fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(ls)
	// The receiver's window stays small and nothing is read until the end.
	unix.SetsockoptInt(ls, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
	if err := unix.Bind(ls, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return false, false, "", fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(ls, 1); err != nil {
		return false, false, "", fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(ls)
	if err != nil {
		return false, false, "", err
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, false, "", fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(c)
	unix.SetsockoptInt(c, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	if err := unix.SetsockoptInt(c, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1); err != nil {
		// Without it no send is zero-copy (Linux before 4.14): nothing to leak this way.
		return false, false, "SO_ZEROCOPY refused (" + errnoName(err) + "): no zero-copy send can be made", nil
	}
	if err := unix.Connect(c, sa); err != nil {
		return false, false, "", fmt.Errorf("connect to the sandbox's own loopback: %w", err)
	}
	s, _, err := unix.Accept4(ls, unix.SOCK_CLOEXEC)
	if err != nil {
		return false, false, "", fmt.Errorf("accept: %w", err)
	}
	defer unix.Close(s)
	a := make([]byte, zcSize)
	for i := range a {
		a[i] = 'A'
	}
	sent, err := unix.SendmsgN(c, a, nil, nil, unix.MSG_ZEROCOPY|unix.MSG_DONTWAIT)
	if errors.Is(err, unix.ENOBUFS) {
		return false, false, "the zero-copy send was refused (ENOBUFS)", nil
	}
	if err != nil {
		return false, false, "", fmt.Errorf("zero-copy send: %w", err)
	}
	// Have the sender's heap turn over: box copies each of these sends into a buffer of
	// its own and frees it, as it freed the zero-copy one.
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, false, "", fmt.Errorf("socketpair: %w", err)
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])
	b, sink := make([]byte, 64<<10), make([]byte, zcSize)
	for i := range b {
		b[i] = 'B'
	}
	for range 400 {
		n, err := unix.SendmsgN(sp[0], b, nil, nil, unix.MSG_DONTWAIT)
		for err == nil && n > 0 {
			k, _, rerr := unix.Recvfrom(sp[1], sink, unix.MSG_DONTWAIT)
			if rerr != nil || k <= 0 {
				break
			}
			n -= k
		}
	}
	got, foreign := 0, 0
	deadline := time.Now().Add(5 * time.Second)
	for got < sent && time.Now().Before(deadline) {
		k, _, err := unix.Recvfrom(s, sink, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil || k <= 0 {
			break
		}
		for _, x := range sink[:k] {
			if x != 'A' {
				foreign++
			}
		}
		got += k
	}
	runtime.KeepAlive(a) // the sandbox's own buffer stays as it was sent
	if foreign > 0 {
		return true, true, fmt.Sprintf("%d of the %d bytes received were never sent (the sender's memory, reused after the send)", foreign, got), nil
	}
	if got < sent {
		return false, false, "", fmt.Errorf("received %d of the %d bytes sent", got, sent)
	}
	return false, true, fmt.Sprintf("the zero-copy send was made; all %d bytes received were the sandbox's", got), nil
}
