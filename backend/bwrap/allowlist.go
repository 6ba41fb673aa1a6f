package bwrap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// NewRunID is a fresh id for an allowlist run: what `box allow --run ID` names.
func NewRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ValidRunID reports whether s is a run id as NewRunID makes them: 8 lowercase hex
// digits (box allow --run takes nothing else, so no id names a path).
func ValidRunID(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NetworkLog is the operator's log of an allowlist run: every refusal and every live
// change, one line each (docs/bwrap.md). The sandbox cannot see or write it.
func NetworkLog(dataHome, runID string) string {
	return filepath.Join(dataHome, "box", "network", runID+".log")
}

// ControlDir holds the control sockets of running allowlist sandboxes: $XDG_RUNTIME_DIR/box
// (never bound into a sandbox), else the data directory's box/network.
func ControlDir(runtimeDir, dataHome string) string {
	if runtimeDir != "" {
		return filepath.Join(runtimeDir, "box")
	}
	return filepath.Join(dataHome, "box", "network")
}

// ControlSocket is the socket `box allow --run ID` talks to.
func ControlSocket(runtimeDir, dataHome, runID string) string {
	return filepath.Join(ControlDir(runtimeDir, dataHome), runID+".sock")
}

// RunningAllowlists lists the run ids whose control socket answers, sorted.
func RunningAllowlists(runtimeDir, dataHome string) []string {
	socks, _ := filepath.Glob(filepath.Join(ControlDir(runtimeDir, dataHome), "*.sock"))
	var ids []string
	for _, s := range socks {
		if c, err := net.DialTimeout("unix", s, time.Second); err == nil {
			c.Close()
			ids = append(ids, strings.TrimSuffix(filepath.Base(s), ".sock"))
		}
	}
	sort.Strings(ids)
	return ids
}

// createInInstance makes a fresh file name in dir, an instance directory the sandbox
// writes: neither dir nor what is there now is followed if it is a link (a planted link
// or fifo is replaced), and the file is created, never opened.
func createInInstance(dir, name string) (*os.File, error) {
	dfd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	defer unix.Close(dfd)
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%s/%s: %w", dir, name, err)
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", dir, name, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

// startAllowlist readies the allowlist tier of a launch: resolv.conf, the operator's log
// and the agent's copy, the control socket, and the BeforeRelease that attaches the proxy.
// The cleanup it installs prints the summary on stderr.
func (p *Plan) startAllowlist(pr Prepared, launch *Launch, stderr io.Writer) (err error) {
	if err := os.WriteFile(p.Spec.ResolvConf, []byte(inet.AllowResolvConf), 0o644); err != nil {
		return fmt.Errorf("allowlist tier: %w", err)
	}
	ps, err := policy.ParseAllow(p.Spec.Allow)
	if err != nil {
		return err
	}
	var closers []func()
	defer func() {
		if err != nil {
			for _, c := range closers {
				c()
			}
		}
	}()
	if err := os.MkdirAll(filepath.Dir(p.NetLog), 0o700); err != nil {
		return fmt.Errorf("allowlist tier: %w", err)
	}
	opLog, err := os.OpenFile(p.NetLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("allowlist tier: run log: %w", err)
	}
	closers = append(closers, func() { opLog.Close() })
	agentLog, err := createInInstance(filepath.Join(p.Spec.InstanceDir, p.Spec.StateDir), RefusalsFile)
	if err != nil {
		return fmt.Errorf("allowlist tier: %w", err)
	}
	closers = append(closers, func() { agentLog.Close() })
	lg := inet.NewLog(opLog, agentLog)

	if err := os.MkdirAll(filepath.Dir(p.Control), 0o700); err != nil {
		return fmt.Errorf("allowlist tier: %w", err)
	}
	os.Remove(p.Control) // a stale socket of a run with the same id cannot answer
	ctl, err := net.Listen("unix", p.Control)
	if err != nil {
		return fmt.Errorf("allowlist tier: control socket: %w", err)
	}
	closers = append(closers, func() { ctl.Close(); os.Remove(p.Control) })

	launch.BeforeRelease = func(pid int) (func(), error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := inet.AttachAllow(ctx, pid, inet.AllowOptions{
			Allow: inet.NewAllowlist(ps), Log: lg, HostAddrs: pr.Net.HostAddrs, HostNets: pr.Net.HostNets,
			SSH: p.sshByName(), SSHAnyAddress: protectionOff(ProtSSHAllowlist),
			SearchLookup: protectionOff(ProtResolverSearch),
		})
		if err != nil {
			for _, c := range closers {
				c()
			}
			return nil, needs(NeedAllowlist, err)
		}
		s.ServeControl(ctl)
		if !pr.Quiet {
			fmt.Fprintf(stderr, "box: allowlist: run %s allows %d pattern(s)%s; refusals are logged to %s (inside: ~/%s/%s); allow more while it runs: box allow --run %s NAME\n",
				p.Policy.RunID, len(ps), sshAllowText(p.sshByName()), p.NetLog, p.Spec.StateDir, RefusalsFile, p.Policy.RunID)
		}
		return func() {
			s.Close()
			for _, c := range closers {
				c()
			}
			if sum := lg.Summary(); sum != "" {
				fmt.Fprintf(stderr, "box: allowlist: %s (log: %s)\n", sum, p.NetLog)
			}
			if a := allowAdvice(lg.RefusedNames(), lg.AllowedLive()); a != "" && !pr.Quiet {
				fmt.Fprintf(stderr, "box: allowlist: %s\n", a)
			}
		}, nil
	}
	return nil
}

// allowAdvice is the end-of-run line that says how the refused names would be allowed
// ("" when none is a host name): the --allow entries for the first few a built-in list
// holds, and those lists. Field test (session 19): npm's ENOTFOUND and the refusal
// summary named registry.npmjs.org, and nothing said that --allow @npm holds it. The
// names are the sandbox's to choose: one no built-in list holds is counted, never
// offered as a flag to paste (hostile review, session 19: six lookups of
// registry-npmjs.org-mirror.attacker.example had the line offer
// --allow registry-npmjs.org-mirror.attacker.example first, before registry.npmjs.org).
// A name a pattern the operator allowed while the run ran (box allow, live) matches is
// allowed, not advised as refused: the live patterns are named instead, as lasting
// this run only, with the --allow entries that keep them (the operator's own words:
// offered whatever list holds them; field review, session 21). Pure.
func allowAdvice(refused, live []string) string {
	const most = 3
	var names, lists []string
	others := 0
	var livePats []policy.Pattern
	for _, l := range live {
		if pat, err := policy.ParsePattern(l); err == nil {
			livePats = append(livePats, pat)
		}
	}
	allowedLive := func(n string) bool {
		for _, pat := range livePats {
			port := pat.Port
			if port == 0 {
				port = 443
			}
			if pat.Matches(n, port) {
				return true
			}
		}
		return false
	}
	for _, n := range refused {
		if allowedLive(n) {
			continue
		}
		if policy.ValidHostname(n) != nil || strings.Count(n, ".") == 0 {
			continue // an address, or what the sandbox made up
		}
		var in []string
		for _, l := range policy.ListNames() {
			list, _ := policy.List(strings.TrimPrefix(l, "@"))
			for _, e := range list {
				if pat, err := policy.ParsePattern(e); err == nil && pat.Matches(n, 443) && !slices.Contains(in, l) {
					in = append(in, l)
				}
			}
		}
		if len(in) == 0 {
			others++
			continue
		}
		if len(names) == most {
			continue
		}
		names = append(names, "--allow "+n)
		for _, l := range in {
			if !slices.Contains(lists, l) {
				lists = append(lists, l)
			}
		}
	}
	var a string
	if len(names) > 0 {
		a = "to allow in the next run: " + strings.Join(names, " ")
		a += " (or the built-in list " + strings.Join(lists, ", ") + ")"
		if len(lists) > 1 {
			a = strings.Replace(a, "built-in list ", "built-in lists ", 1)
		}
		a += ", or allow = [...] in the profile"
	}
	if others > 0 {
		if a != "" {
			a += "; "
		}
		a += fmt.Sprintf("%d refused name(s) no built-in list holds: the sandbox chose them, read the log before you allow any", others)
	}
	if len(live) > 0 {
		flags := make([]string, len(live))
		for i, l := range live {
			if strings.Contains(l, "*") {
				l = "'" + l + "'"
			}
			flags[i] = "--allow " + l
		}
		if a != "" {
			a += "; "
		}
		a += "allowed during this run by box allow, for this run only: " + strings.Join(live, ", ") +
			"; to allow from the start of the next run: " + strings.Join(flags, " ") + ", or allow = [...] in the profile"
	}
	return a
}
