package bwrap_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// zerocopyProbe is compiled by the test (cc) and run inside the sandbox. It sends 256 KiB
// of 'A' with MSG_ZEROCOPY on a TCP socket (SO_ZEROCOPY on) to a server of its own on
// the sandbox's loopback that reads nothing yet: past the receiver's small window the
// bytes wait in the sender's queue, on the pages the send was made from. Box makes every
// sendmsg itself, from a buffer of its own: those pages are box's, and box frees the
// buffer once the call returns. The probe then has box copy 64 KiB sends of 'B' (a
// socketpair, drained), so box's heap turns over, and only then reads what the server
// received: any byte but 'A' is box's memory, reused after the send, sent on the wire.
// It prints the send's result, what arrived, and whether a zero-copy completion came
// back (the kernel's own word that it sent from the caller's pages after the call).
const zerocopyProbe = `
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
#define N (256 * 1024)

int main(void) {
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	int small = 4096, one = 1, big = 4 << 20;
	setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&sa, &sl)) {
		perror("listen");
		return 1;
	}
	int c = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	if (setsockopt(c, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one)) {
		printf("so-zerocopy %s\n", strerror(errno));
		return 0;
	}
	if (connect(c, (struct sockaddr *)&sa, sizeof sa)) {
		perror("connect");
		return 1;
	}
	int s = accept(ls, NULL, NULL);
	char *a = malloc(N);
	memset(a, 'A', N);
	struct iovec v = {.iov_base = a, .iov_len = N};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
	long sent = sendmsg(c, &m, MSG_ZEROCOPY | MSG_DONTWAIT);
	if (sent < 0) {
		printf("zc-send %s\n", strerror(errno));
		sent = sendmsg(c, &m, MSG_DONTWAIT); // as a program falls back: a copying send
		printf("fallback-send %s\n", sent > 0 ? "ok" : strerror(errno));
	} else {
		printf("zc-send ok\n");
	}
	int sp[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
	char *b = malloc(65536), *sink = malloc(N);
	memset(b, 'B', 65536);
	for (int i = 0; i < 400; i++) {
		struct iovec bv = {.iov_base = b, .iov_len = 65536};
		struct msghdr bm = {.msg_iov = &bv, .msg_iovlen = 1};
		long k = sendmsg(sp[0], &bm, MSG_DONTWAIT);
		while (k > 0) {
			long g = recv(sp[1], sink, N, MSG_DONTWAIT);
			if (g <= 0) break;
			k -= g;
		}
	}
	long got = 0, foreign = 0;
	for (int idle = 0; got < sent && idle < 5000;) {
		long g = recv(s, sink, N, MSG_DONTWAIT);
		if (g < 0 && errno == EAGAIN) {
			idle++;
			usleep(1000);
			continue;
		}
		if (g <= 0) break;
		for (long i = 0; i < g; i++) foreign += sink[i] != 'A';
		got += g;
	}
	printf("received %ld\nforeign %ld\n", got, foreign);
	char cb[256];
	struct msghdr em = {.msg_control = cb, .msg_controllen = sizeof cb};
	const char *zc = "none";
	if (recvmsg(c, &em, MSG_ERRQUEUE | MSG_DONTWAIT) >= 0)
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&em); h; h = CMSG_NXTHDR(&em, h)) {
			struct sock_extended_err *ee = (void *)CMSG_DATA(h);
			if (ee->ee_origin == SO_EE_ORIGIN_ZEROCOPY) zc = "yes";
		}
	printf("completion %s\n", zc);
	return 0;
}
`

// zerocopyRun compiles and runs zerocopyProbe in a sandbox of w and returns its lines.
func zerocopyRun(t *testing.T, w *world) map[string]string {
	t.Helper()
	cc := testenv.RequireTool(t, "cc")
	src := filepath.Join(w.proj, "zcprobe.c")
	w.write(src, zerocopyProbe)
	bin := filepath.Join(w.proj, "zcprobe")
	if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	must(t, os.Chown(bin, w.uid, w.gid))
	r := w.run("run", "-y", "--network", "none", "--", "./zcprobe")
	if r.code != 0 {
		t.Fatalf("zcprobe: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("sandbox:\n%s", r.stdout)
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		got[k] = v
	}
	return got
}

// TestUnixSocketSendZerocopy: a sandbox's zero-copy send (MSG_ZEROCOPY) must not make
// the kernel send box's own memory after box's sendmsg returned (a hostile review's
// finding, session 11: box passed the caller's flags on, so the kernel pinned box's copy
// of the data and sent it later, from pages box had freed and reused: the sandbox's
// receiver got 252 KiB of box's heap). Box refuses it (ENOBUFS, the kernel's answer when
// it cannot make a zero-copy send; the probe falls back to a copying send, which works),
// no completion comes back, and every byte that arrives is the sandbox's. With the
// refusal switched off (a test build, BOX_UNSAFE_OFF=socket-zerocopy) the completion
// comes back and bytes the sandbox never sent arrive: the breach.
func TestUnixSocketSendZerocopy(t *testing.T) {
	w := newWorld(t)
	got := zerocopyRun(t, w)
	if got["so-zerocopy"] != "" {
		t.Fatalf("SO_ZEROCOPY refused in the sandbox (%s): the probe cannot run", got["so-zerocopy"])
	}
	if got["completion"] != "none" {
		t.Errorf("a zero-copy completion came back (%q): the kernel sent from box's buffer after the call", got["completion"])
	}
	if got["foreign"] != "0" {
		t.Errorf("%s bytes the sandbox never sent arrived (box's memory, reused after the send)", got["foreign"])
	}
	if got["received"] != "262144" {
		t.Errorf("received %q bytes, want 262144", got["received"])
	}
	if got["zc-send"] != "No buffer space available" || got["fallback-send"] != "ok" {
		t.Errorf("zc-send %q fallback-send %q, want ENOBUFS then ok", got["zc-send"], got["fallback-send"])
	}
	t.Run("off", func(t *testing.T) {
		off := newWorld(t)
		off.withProtectionOff(t, "socket-zerocopy")
		got := zerocopyRun(t, off)
		if got["zc-send"] != "ok" || got["completion"] != "yes" {
			t.Errorf("with the refusal off the zero-copy send was not made (zc-send %q, completion %q)", got["zc-send"], got["completion"])
		}
		if got["foreign"] == "0" || got["foreign"] == "" {
			t.Errorf("with the refusal off no byte of box's memory arrived (foreign %q): the probe shows no breach", got["foreign"])
		}
	})
}
