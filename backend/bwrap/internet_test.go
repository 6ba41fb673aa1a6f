package bwrap_test

// The internet tier through the CLI, for real: box run --network internet as the
// unprivileged user in the lab's host namespace, with both user-mode helpers.

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxInternetTier(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "curl", "pasta", "slirp4netns", "nsenter") {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	l := lab.New(t)
	url := func(a netip.Addr, port int) string {
		return "http://" + netip.AddrPortFrom(a, uint16(port)).String() + "/"
	}
	// Each target: its URL and whether the tier must reach it.
	targets := []struct {
		name, url string
		reach     bool
	}{
		{"internet by name", "http://" + lab.InternetName + "/", true},
		{"internet by address", url(lab.Internet, lab.HTTPPort), true},
		{"LAN host", url(lab.LANHost, lab.HTTPPort), false},
		{"metadata", url(lab.Metadata, lab.HTTPPort), false},
		{"host public address", url(lab.HostPublic, lab.HostPort), false},
		{"host private address", url(lab.HostPrivate, lab.HostPort), false},
		{"host loopback", url(netip.MustParseAddr("127.0.0.1"), lab.HostPort), false},
	}
	var script strings.Builder
	for i, tg := range targets {
		fmt.Fprintf(&script, "curl -s --max-time 4 %s >/tmp/out%d 2>&1 && echo \"%d OK $(cat /tmp/out%d)\" || echo \"%d FAIL\"\n", tg.url, i, i, i, i)
	}
	// The filter cannot be removed from inside: no capabilities, no user namespaces.
	script.WriteString("unshare -Urn true 2>/dev/null && echo USERNS; true\n")

	for _, helper := range []string{"pasta", "slirp4netns"} {
		t.Run(helper, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := l.UserCommand(ctx, w.uid, w.gid, w.box, "run", "-y", "--network", "internet", "--", "sh", "-c", script.String())
			c.Dir = w.proj
			c.Env = append(w.env, "BOX_INTERNET_HELPER="+helper)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			err := c.Run()
			if err != nil {
				t.Fatalf("box run --network internet: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
			}
			for i, tg := range targets {
				ok := strings.Contains(out.String(), fmt.Sprintf("%d OK", i))
				if ok != tg.reach {
					t.Errorf("%s (%s): reached=%v, want %v\n%s", tg.name, tg.url, ok, tg.reach, out.String())
				}
			}
			if !strings.Contains(out.String(), "0 OK "+lab.InternetBody) {
				t.Errorf("internet page body wrong:\n%s", out.String())
			}
			if strings.Contains(out.String(), "USERNS") {
				t.Error("a user namespace could be created inside")
			}
		})
	}
}
