package main

// box doctor's lines for the restricted tier: one per granted user (the operator's
// view), or the granted user's own view of their way in.

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
)

// CheckGrants is doctor's line when no user is granted; each grant's line is "grant USER".
const CheckGrants = "grants"

// grantChecks checks every grant of this host: every project box grant made, and every
// user-UID project incus-user made on its own (a user on its loose defaults).
func grantChecks(ctx context.Context, e *env, c *incus.Client) []host.Check {
	ps, err := c.Projects(ctx)
	if err != nil {
		return []host.Check{{Name: CheckGrants, Status: host.Fail, Detail: err.Error()}}
	}
	gap, err := portNameGap()
	gap = gap || err != nil // an error reads as the weaker case
	var out []host.Check
	for _, p := range ps {
		owner, granted := p.Config[host.GrantKey]
		uid, isUser := host.ProjectOfUID(p.Name)
		switch {
		case granted:
			out = append(out, grantCheck(ctx, e, c, p, owner, gap))
		case isUser:
			name := strconv.Itoa(uid)
			if u, err := user.LookupId(name); err == nil {
				name = u.Username
			}
			out = append(out, host.Check{Name: "grant " + name, Status: host.Fail,
				Detail: fmt.Sprintf("project %s was set up by incus-user on its own defaults (its own NAT bridge, host paths, nesting), not by box grant", p.Name),
				Fix:    "box grant " + name + " converges it (or delete the project with incus)"})
		}
	}
	if len(out) == 0 {
		return []host.Check{{Name: CheckGrants, Status: host.OK, Detail: "no user is granted (box grant USER)"}}
	}
	if _, err := os.Stat(e.incusDir() + "/" + host.UserSocket); err != nil {
		out = append(out, host.Check{Name: CheckGrants, Status: host.Fail,
			Detail: "incus-user's socket " + e.incusDir() + "/" + host.UserSocket + " is not there: granted users cannot reach their projects",
			Fix:    "start incus-user (systemctl enable --now incus-user.socket)"})
	}
	return out
}

// grantCheck compares one grant with what box grant sets.
func grantCheck(ctx context.Context, e *env, c *incus.Client, p incus.Project, owner string, portNameGap bool) host.Check {
	name := "grant " + owner
	fix := "box grant " + owner + " converges it again"
	fail := func(detail string) host.Check {
		return host.Check{Name: name, Status: host.Fail, Detail: p.Name + ": " + detail, Fix: fix}
	}
	g, err := e.lookupGrantee(owner)
	if err != nil {
		return host.Check{Name: name, Status: host.Fail, Detail: p.Name + ": the account " + owner + " is gone",
			Fix: "box revoke " + owner + " --purge"}
	}
	if g.project() != p.Name {
		return host.Check{Name: name, Status: host.Fail, Detail: fmt.Sprintf("%s: %s's uid is now %d (project %s)", p.Name, owner, g.UID, g.project()),
			Fix: "the uid was reused: delete the project with incus"}
	}
	s, err := readGrant(ctx, e, c, g)
	if err != nil {
		return fail(err.Error())
	}
	if d := s.plan.ProjectDrift(p.Config); len(d) > 0 {
		var ds []string
		for _, x := range d {
			ds = append(ds, x.String())
		}
		return fail("loosened or changed: " + strings.Join(ds, "; "))
	}
	uc := c.InProject(p.Name)
	var names []string
	for _, want := range host.GrantProfiles(s.placement) {
		names = append(names, want.Name)
		got, err := uc.Profile(ctx, want.Name)
		if err != nil && !incus.IsNotFound(err) {
			return fail(err.Error())
		}
		if err != nil {
			got = nil
		}
		if d := host.ProfileDrift(want, got); d != "" {
			return fail(d)
		}
	}
	if all, err := uc.Profiles(ctx); err == nil {
		for _, pr := range all {
			if !slices.Contains(names, pr.Name) {
				// The user's own profiles: bound by the project's restrictions all the same.
				names = append(names, pr.Name+" (the user's)")
			}
		}
	}
	if s.bridge != nil {
		return fail("incus-user's private bridge " + s.bridge.Name + " is there (no box isolation on it)")
	}
	fp := pemFingerprint(s.cert)
	switch {
	case len(s.trusted) == 0:
		return host.Check{Name: name, Status: host.OK,
			Detail: fmt.Sprintf("%s: revoked (no trusted certificate); %d instance(s) kept", p.Name, len(s.instances)),
			Fix:    "box revoke " + owner + " --purge deletes them; box grant " + owner + " gives access back"}
	case len(s.trusted) > 1:
		return fail(fmt.Sprintf("%d certificates reach the project; box grant gives one", len(s.trusted)))
	}
	ct := s.trusted[0]
	if !ct.Restricted || !slices.Equal(ct.Projects, []string{p.Name}) {
		return fail(fmt.Sprintf("certificate %s is not confined to %s (restricted=%v, projects %v)", ct.Name, p.Name, ct.Restricted, ct.Projects))
	}
	if ct.Fingerprint != fp {
		return fail("the trusted certificate is not the one incus-user presents for " + owner)
	}
	detail := fmt.Sprintf("%s: network %s only, profiles %s, restrictions as box set them, %d instance(s)",
		p.Name, s.plan.Bridge, strings.Join(names, ", "), len(s.instances))
	if !g.inSockGroup() {
		return host.Check{Name: name, Status: host.Warn, Detail: detail + "; not in group " + g.SockGroup + " (the key to incus-user's socket)", Fix: fix}
	}
	if portNameGap {
		return host.Check{Name: name, Status: host.Warn, Detail: detail + "; but the user can name their box's port out of the box-to-box drop (no nft bridge meta, no br_netfilter)",
			Fix: "modprobe br_netfilter and sysctl net.bridge.bridge-nf-call-iptables=1, or a kernel with CONFIG_NFT_BRIDGE_META (box drill's grant:" + owner + ":port-name row shows the gap)"}
	}
	return host.Check{Name: name, Status: host.OK, Detail: detail}
}

// CheckMyGrant is the granted user's own doctor line.
const CheckMyGrant = "grant"

// userDoctor is doctor run by a granted user: the host stack is the operator's and out of
// their sight; what they can check is their way in.
func userDoctor(ctx context.Context, e *env) []host.Check {
	c := e.localClient()
	defer c.Close()
	sock := c.Socket()
	where := fmt.Sprintf("incus-user's socket %s, project %s", sock, c.Project)
	fix := "ask the operator to run: box grant " + currentUser()
	p, err := c.ProjectByName(ctx, c.Project)
	if err != nil {
		return []host.Check{{Name: CheckMyGrant, Status: host.Fail, Detail: where + ": " + err.Error(), Fix: fix}}
	}
	if _, ok := p.Config[host.GrantKey]; !ok {
		return []host.Check{{Name: CheckMyGrant, Status: host.Fail,
			Detail: where + ": incus-user set this project up on its own loose defaults, not box grant (its own NAT bridge, host paths, nesting)", Fix: fix}}
	}
	placement := vm.Placement(e.getenv)
	if _, err := c.Profile(ctx, placement); err != nil {
		return []host.Check{{Name: CheckMyGrant, Status: host.Fail, Detail: where + ": " + err.Error(), Fix: fix}}
	}
	return []host.Check{{Name: CheckMyGrant, Status: host.OK,
		Detail: where + ": reachable, placement profile " + placement + " there (the host's stack is the operator's: box doctor as root checks it)"}}
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
