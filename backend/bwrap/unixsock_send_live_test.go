package bwrap_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// sendProbe is compiled by the test (cc) and run inside the sandbox.
const sendProbe = `
// sendprobe: run inside the sandbox by unixsock_send_live_test.go.
//   sendprobe race N PATH   one thread sends "RACEWIN" to the unix path PATH on fd 100
//                           (sendto and sendmsg, alternately) N times while another swaps
//                           a UDP and a unix datagram socket at fd 100.
//   sendprobe func PATH     normal sends at work, one "key value" line each; PATH is a
//                           host datagram socket, which must be refused.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static volatile int stop;
static int udp, ud;

static void *swapper(void *arg) {
	(void)arg;
	while (!stop) {
		dup2(udp, 100);
		dup2(ud, 100);
	}
	return NULL;
}

static struct sockaddr_un un(const char *p) {
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strncpy(a.sun_path, p, sizeof a.sun_path - 1);
	return a;
}

static int race(long n, const char *path) {
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	ud = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un a = un(path);
	pthread_t t;
	pthread_create(&t, NULL, swapper, NULL);
	long ok = 0;
	for (long i = 0; i < n; i++) {
		if (i % 2 == 0) {
			if (sendto(100, "RACEWIN", 7, 0, (struct sockaddr *)&a, sizeof a) == 7) ok++;
		} else {
			struct iovec v = {.iov_base = "RACEWIN", .iov_len = 7};
			struct msghdr m = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &v, .msg_iovlen = 1};
			if (sendmsg(100, &m, 0) == 7) ok++;
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("sent %ld\n", ok);
	return 0;
}

static const char *res(long r, long want) {
	static char b[128];
	if (r == want) return "ok";
	snprintf(b, sizeof b, "got %ld (%s)", r, r < 0 ? strerror(errno) : "-");
	return b;
}

static int func(const char *host) {
	char buf[64];
	// UDP on the sandbox's loopback: sendto, sendmsg, sendmmsg.
	int srv = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	bind(srv, (struct sockaddr *)&sa, sizeof sa);
	getsockname(srv, (struct sockaddr *)&sa, &sl);
	int c = socket(AF_INET, SOCK_DGRAM, 0);
	printf("udp-sendto %s\n", res(sendto(c, "one", 3, 0, (struct sockaddr *)&sa, sizeof sa), 3));
	long r = recv(srv, buf, sizeof buf, 0);
	printf("udp-sendto-recv %s\n", r == 3 && !memcmp(buf, "one", 3) ? "ok" : "bad");
	struct iovec v[2] = {{.iov_base = "tw", .iov_len = 2}, {.iov_base = "o", .iov_len = 1}};
	struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = v, .msg_iovlen = 2};
	printf("udp-sendmsg %s\n", res(sendmsg(c, &m, 0), 3));
	r = recv(srv, buf, sizeof buf, 0);
	printf("udp-sendmsg-recv %s\n", r == 3 && !memcmp(buf, "two", 3) ? "ok" : "bad");
	struct mmsghdr mm[3];
	memset(mm, 0, sizeof mm);
	for (int i = 0; i < 3; i++) mm[i].msg_hdr = m;
	printf("udp-sendmmsg %s\n", res(sendmmsg(c, mm, 3, 0), 3));
	int got = 0;
	for (int i = 0; i < 3; i++)
		if (mm[i].msg_len == 3 && recv(srv, buf, sizeof buf, MSG_DONTWAIT) == 3) got++;
	printf("udp-sendmmsg-recv %s\n", got == 3 ? "ok" : "bad");
	// Control messages: IP_TTL passes; SO_MARK, which needs CAP_NET_ADMIN the caller
	// lacks (box has it, owning the sandbox's namespaces), is refused.
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } tc;
	int cv = 7;
	for (int i = 0; i < 2; i++) {
		memset(&tc, 0, sizeof tc);
		struct iovec tv = {.iov_base = "ttl", .iov_len = 3};
		struct msghdr tm = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &tv, .msg_iovlen = 1, .msg_control = tc.b, .msg_controllen = sizeof tc.b};
		struct cmsghdr *th = CMSG_FIRSTHDR(&tm);
		th->cmsg_level = i == 0 ? IPPROTO_IP : SOL_SOCKET;
		th->cmsg_type = i == 0 ? IP_TTL : SO_MARK;
		th->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(th), &cv, sizeof cv);
		r = sendmsg(c, &tm, 0);
		if (i == 0)
			printf("udp-ttl %s\n", res(r, 3));
		else
			printf("udp-somark %s\n", r < 0 ? strerror(errno) : "SENT");
	}
	recv(srv, buf, sizeof buf, MSG_DONTWAIT);
	recv(srv, buf, sizeof buf, MSG_DONTWAIT);
	// The sandbox's own unix datagram socket, by path; an fd passed along.
	unlink("own.dsock");
	int own = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un oa = un("own.dsock");
	bind(own, (struct sockaddr *)&oa, sizeof oa);
	int u = socket(AF_UNIX, SOCK_DGRAM, 0);
	printf("own-sendto %s\n", res(sendto(u, "OWN", 3, 0, (struct sockaddr *)&oa, sizeof oa), 3));
	r = recv(own, buf, sizeof buf, 0);
	printf("own-recv %s\n", r == 3 && !memcmp(buf, "OWN", 3) ? "ok" : "bad");
	int p[2];
	pipe(p);
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } ctl;
	memset(&ctl, 0, sizeof ctl);
	struct iovec fv = {.iov_base = "FD", .iov_len = 2};
	struct msghdr fm = {.msg_name = &oa, .msg_namelen = sizeof oa, .msg_iov = &fv, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
	struct cmsghdr *ch = CMSG_FIRSTHDR(&fm);
	ch->cmsg_level = SOL_SOCKET;
	ch->cmsg_type = SCM_RIGHTS;
	ch->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(ch), &p[1], sizeof(int));
	printf("own-rights %s\n", res(sendmsg(u, &fm, 0), 2));
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } rctl;
	char rb[8];
	struct iovec rv = {.iov_base = rb, .iov_len = sizeof rb};
	struct msghdr rm = {.msg_iov = &rv, .msg_iovlen = 1, .msg_control = rctl.b, .msg_controllen = sizeof rctl.b};
	const char *fdok = "bad";
	if (recvmsg(own, &rm, 0) == 2) {
		struct cmsghdr *rc = CMSG_FIRSTHDR(&rm);
		int fd;
		if (rc && rc->cmsg_type == SCM_RIGHTS) {
			memcpy(&fd, CMSG_DATA(rc), sizeof fd);
			if (write(fd, "P", 1) == 1 && read(p[0], rb, 1) == 1 && rb[0] == 'P') fdok = "ok";
		}
	}
	printf("own-rights-recv %s\n", fdok);
	// A connected unix datagram socket and sendmsg without an address (sd_notify).
	connect(u, (struct sockaddr *)&oa, sizeof oa);
	struct msghdr nm = {.msg_iov = &fv, .msg_iovlen = 1};
	printf("connected-sendmsg %s\n", res(sendmsg(u, &nm, 0), 2));
	r = recv(own, buf, sizeof buf, 0);
	printf("connected-recv %s\n", r == 2 ? "ok" : "bad");
	// The host's datagram socket: refused.
	struct sockaddr_un ha = un(host);
	r = sendto(u, "HOST", 4, 0, (struct sockaddr *)&ha, sizeof ha);
	printf("host-sendto %s\n", r < 0 ? strerror(errno) : "SENT");
	struct iovec hv = {.iov_base = "HOST", .iov_len = 4};
	struct msghdr hm = {.msg_name = &ha, .msg_namelen = sizeof ha, .msg_iov = &hv, .msg_iovlen = 1};
	r = sendmsg(u, &hm, 0);
	printf("host-sendmsg %s\n", r < 0 ? strerror(errno) : "SENT");
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 4 && !strcmp(argv[1], "race")) return race(atol(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "func")) return func(argv[2]);
	fprintf(stderr, "usage: sendprobe race N PATH | func PATH\n");
	return 2;
}
`

// buildSendProbe compiles sendProbe into the working directory.
func buildSendProbe(t *testing.T, w *world) {
	t.Helper()
	cc := testenv.RequireTool(t, "cc")
	src := filepath.Join(w.proj, "sendprobe.c")
	w.write(src, sendProbe)
	bin := filepath.Join(w.proj, "sendprobe")
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	must(t, os.Chown(bin, w.uid, w.gid))
}

// hostDgram is a host datagram server on path (the test user's, mode 0777: only box
// stands between the sandbox and it); it counts the datagrams it receives and signals
// marked when one reads MARK.
func hostDgram(t *testing.T, w *world, path string) (n *atomic.Int64, marked chan struct{}) {
	t.Helper()
	os.Remove(path)
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	must(t, os.Chown(path, w.uid, w.gid))
	must(t, os.Chmod(path, 0o777))
	n, marked = new(atomic.Int64), make(chan struct{}, 1)
	go func() {
		b := make([]byte, 64)
		for {
			k, err := c.Read(b)
			if err != nil {
				return
			}
			if string(b[:k]) == "MARK" {
				marked <- struct{}{}
				continue
			}
			n.Add(1)
		}
	}()
	return n, marked
}

// raceProbe runs the race (iterations sends) in a sandbox and returns how many
// datagrams the host server on ./d.sock received. The count is read after a marker
// datagram the test itself sends once the sandbox has ended, so every datagram the
// sandbox sent has been read (a unix datagram queue is in order).
func raceProbe(t *testing.T, w *world, iterations string) int64 {
	t.Helper()
	path := filepath.Join(w.proj, "d.sock")
	n, marked := hostDgram(t, w, path)
	r := w.run("run", "-y", "--", "./sendprobe", "race", iterations, "d.sock")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sent ") {
		t.Fatalf("sendprobe race: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("sandbox: %s", strings.TrimSpace(r.stdout))
	defer func() { t.Logf("host server received %d", n.Load()) }()
	marker, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	if _, err := marker.Write([]byte("MARK")); err != nil {
		t.Fatal(err)
	}
	<-marked
	return n.Load()
}

// TestUnixSocketSendRace: the race a hostile review reproduced (issue 19, breach 2). A
// thread in the sandbox sends to ./d.sock, a host datagram server, on fd 100 while
// another swaps a UDP and a unix datagram socket at fd 100. Box makes every
// address-carrying send itself on the socket object it took, with its own copy of the
// address, so not one datagram reaches the host server; with that switched off (a test
// build: the send continued when box saw the UDP socket) datagrams arrive.
func TestUnixSocketSendRace(t *testing.T) {
	w := newWorld(t)
	buildSendProbe(t, w)
	if got := raceProbe(t, w, "6000"); got != 0 {
		t.Errorf("%d datagrams from the sandbox reached the host server", got)
	}
	t.Run("off", func(t *testing.T) {
		off := newWorld(t)
		off.withProtectionOff(t, "socket-sends")
		buildSendProbe(t, off)
		if got := raceProbe(t, off, "6000"); got == 0 {
			t.Errorf("with box's sends switched off, no datagram reached the host server: the race was not reproduced")
		}
	})
}

// TestUnixSocketSends: with box making the sends, normal ones still work at tier none
// (UDP on the sandbox's loopback by sendto, sendmsg with two iovecs and sendmmsg with
// msg_len written back; the sandbox's own unix datagram socket by path, an fd passed
// with SCM_RIGHTS, sendmsg without an address on a connected socket, an IP_TTL control
// message); SO_MARK, which the caller lacks the capability for and box has, is refused;
// and the host's
// datagram socket is refused (EACCES) by sendto and sendmsg.
func TestUnixSocketSends(t *testing.T) {
	w := newWorld(t)
	buildSendProbe(t, w)
	n, _ := hostDgram(t, w, filepath.Join(w.proj, "d.sock"))
	r := w.run("run", "-y", "--network", "none", "--", "./sendprobe", "func", "d.sock")
	if r.code != 0 {
		t.Fatalf("sendprobe func: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		got[k] = v
	}
	if got["udp-somark"] != "Operation not permitted" {
		t.Errorf("udp-somark: %q, want Operation not permitted (box must not lend its capabilities)", got["udp-somark"])
	}
	for _, k := range []string{"udp-ttl", "udp-sendto", "udp-sendto-recv", "udp-sendmsg", "udp-sendmsg-recv", "udp-sendmmsg", "udp-sendmmsg-recv",
		"own-sendto", "own-recv", "own-rights", "own-rights-recv", "connected-sendmsg", "connected-recv"} {
		if got[k] != "ok" {
			t.Errorf("%s: %q, want ok", k, got[k])
		}
	}
	for _, k := range []string{"host-sendto", "host-sendmsg"} {
		if got[k] != "Permission denied" {
			t.Errorf("%s: %q, want Permission denied", k, got[k])
		}
	}
	if n.Load() != 0 {
		t.Errorf("the host datagram server received %d datagrams", n.Load())
	}
}
