package host

// box grant's sequence: every precondition before any change, then incus-user's first
// contact with a fresh user, the project converged, incus-user's bridge removed, the one
// certificate trusted, the socket's group joined.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// ErrForeignProject: the user's project exists and is not one box grant can converge.
var ErrForeignProject = errors.New("project not made by box grant")

// PortNameFact is PortNameGap on this host.
type PortNameFact struct {
	Gap bool
	Err error
	// Accepted: the operator takes the gap (box grant --port-name-firewall).
	Accepted bool
}

// DetectPortNameGap reads the host facts of PortNameGap: nft bridge meta, and whether
// switched IPv4 passes the inet hooks (br_netfilter).
func DetectPortNameGap() (bool, error) {
	meta, err := DetectBridgeMeta()
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(BridgeNFPath)
	return PortNameGap(meta, err == nil && strings.TrimSpace(string(b)) == "1"), nil
}

// ErrPortNameFirewall: on this host a granted user can name their box out of the
// box-to-box drop.
var ErrPortNameFirewall = errors.New("this host's box-to-box drop can be escaped by a granted user: the kernel has no nft bridge meta (CONFIG_NFT_BRIDGE_META), so the firewall matches the bridge's ports by name, which incusd lets a restricted project set (NIC host_name), and switched IPv4 skips the inet hooks (" + BridgeNFPath + " is not 1)")

// GrantRequest is one box grant.
type GrantRequest struct {
	User   string
	Limits map[string]string
	// SetLimits: Limits replace the recorded ones (else a converge keeps them).
	SetLimits bool
	PortName  PortNameFact
}

// Grant gives r.User their project, or converges the one they have.
func (h GrantHost) Grant(ctx context.Context, r GrantRequest) error {
	c := h.Client
	g, err := h.lookup(r.User)
	if err != nil {
		return err
	}
	meta := r.PortName
	if meta.Err != nil {
		return &GrantError{Why: GrantPortNameProbe, User: g.Name, Project: g.Project(), Err: fmt.Errorf("box grant: %w", meta.Err)}
	}
	if meta.Gap && !meta.Accepted {
		return ErrPortNameFirewall // the CLI words the hint (cmd/box/hints.go)
	}
	if err := g.needSocket(); err != nil {
		return err
	}
	s, err := h.readGrant(ctx, g)
	if err != nil {
		return err
	}
	// Every precondition before any change.
	if s.project != nil {
		if owner, ok := s.project.Config[GrantKey]; ok && owner != g.Name {
			return &GrantError{Why: GrantUIDReused, User: g.Name, Project: g.Project(), Owner: owner,
				Err: fmt.Errorf("project %s: %w: it is %s's grant (uid %d is now %s)", g.Project(), ErrForeignProject, owner, g.UID, g.Name)}
		}
		if _, ok := s.project.Config[GrantKey]; !ok && len(s.instances) > 0 {
			names := make([]string, len(s.instances))
			for i, in := range s.instances {
				names[i] = in.Name
			}
			return &GrantError{Why: GrantForeignProject, User: g.Name, Project: g.Project(),
				Err: fmt.Errorf("project %s: %w: incus-user made it, and it holds %s", g.Project(), ErrForeignProject, strings.Join(names, ", "))}
		}
	}
	if s.project == nil {
		// incus-user's setup below creates that network; an operator's of the same name
		// would fail it.
		if n, err := c.InProject("default").Network(ctx, UserBridge(g.UID)); err == nil && !isIncusUserBridge(n) {
			return &GrantError{Why: GrantNetworkExists, User: g.Name, Project: g.Project(),
				Err: fmt.Errorf("network %s exists: incus-user names %s's private bridge so, and its setup would fail", n.Name, g.Name)}
		}
	}
	if s.bridge != nil {
		for _, u := range s.bridge.UsedBy {
			if u != "/1.0/profiles/default?project="+g.Project() {
				return &GrantError{Why: GrantBridgeUsed, User: g.Name, Project: g.Project(), UsedBy: u,
					Err: fmt.Errorf("network %s (incus-user's private bridge for %s) is used by %s", s.bridge.Name, g.Name, u)}
			}
		}
	}

	fresh := s.project == nil
	if fresh {
		// incus-user makes the project (see touchIncusUser); a directory left by a
		// revoke would tell it the user is set up already.
		if err := os.RemoveAll(g.UserDir); err != nil {
			return err
		}
		// A private bridge left from an earlier setup would fail incus-user's (it makes
		// one); nothing uses it (checked above).
		if s.bridge != nil {
			if err := c.InProject("default").DeleteNetwork(ctx, s.bridge.Name); err != nil {
				return h.incusErr(err)
			}
		}
		if err := g.touchIncusUser(ctx); err != nil {
			return errs.WithHint(err, "is incus-user healthy? (journalctl -u incus-user; it needs the user in getent passwd and a storage pool named default)")
		}
		if s, err = h.readGrant(ctx, g); err != nil {
			return err
		}
		if s.project == nil {
			return errs.WithHint(fmt.Errorf("incus-user did not set %s up: no project %s", g.Name, g.Project()), "journalctl -u incus-user says why")
		}
	}
	if r.SetLimits {
		s.plan.Limits = r.Limits
	}
	uc := c.InProject(g.Project())
	profiles := GrantProfiles(s.placement)
	// The default profile first: its NIC on the private bridge would block the narrowing
	// of the networks.
	if err := uc.ReplaceProfile(ctx, profiles[0]); err != nil {
		return h.incusErr(err)
	}
	if err := c.ReplaceProject(ctx, s.plan.Project()); err != nil {
		return &GrantError{Why: GrantRefused, User: g.Name, Project: g.Project(), Err: h.incusErr(err)}
	}
	for _, p := range profiles {
		err := uc.ReplaceProfile(ctx, p)
		if incus.IsNotFound(err) {
			err = uc.CreateProfileFrom(ctx, p)
		}
		if err != nil {
			return h.incusErr(err)
		}
	}
	if s.bridge != nil {
		if err := c.InProject("default").DeleteNetwork(ctx, s.bridge.Name); err != nil {
			return h.incusErr(err)
		}
	}
	cert := s.cert
	if cert == nil {
		if cert, err = g.writeUserCert(); err != nil {
			return fmt.Errorf("certificate of %s: %w", g.Name, err)
		}
	}
	fp := PemFingerprint(cert)
	found := false
	for _, ct := range s.trusted {
		if ct.Fingerprint == fp {
			found = true
			if err := c.RestrictCertificate(ctx, fp, g.CertName(), []string{g.Project()}); err != nil {
				return h.incusErr(err)
			}
			continue
		}
		// Another certificate confined to this project (an old one of the user's, or
		// one added by hand): the grant is the user's one key.
		if err := c.DeleteCertificate(ctx, ct.Fingerprint); err != nil {
			return h.incusErr(err)
		}
	}
	if !found {
		if err := c.TrustCertificate(ctx, g.CertName(), cert, g.Project()); err != nil {
			return h.incusErr(err)
		}
	}
	joined := false
	if !g.InSockGroup() {
		if err := g.setSockGroup(true); err != nil {
			return errs.WithHint(err, "add "+g.Name+" to group "+g.SockGroup+" yourself; the rest of the grant is in place")
		}
		joined = true
	}
	verb := "granted"
	if !fresh {
		verb = "converged"
	}
	h.note("%s: %s (uid %d) has project %s: network %s only, profile %s, no host paths, no nesting, no privileged or raw config",
		verb, g.Name, g.UID, g.Project(), s.plan.Bridge, s.placement.Name)
	if joined {
		h.note("%s joined group %s (the key to %s): it takes effect at their next login", g.Name, g.SockGroup, g.Socket)
	}
	h.note("as %s, box finds that socket and project by itself: box new --name work", g.Name)
	return nil
}
