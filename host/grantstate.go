package host

// What every grant sequence (grant, revoke, doctor's lines, the drill's rows) reads of
// one user's grant, and the host it acts on.

import (
	"context"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
)

// GrantHost is what the grant sequences act on: the local incusd, as its administrator,
// and the facts the caller read around it.
type GrantHost struct {
	Client    *incus.Client
	IncusDir  string // incusd's directory (INCUS_DIR)
	Placement string // the default project's placement profile
	// IncusErr gives an error from incusd the caller's hint (nil: as it is).
	IncusErr func(error) error
	// Note prints a line of progress (nil: none).
	Note func(format string, a ...any)
}

func (h GrantHost) incusErr(err error) error {
	if h.IncusErr == nil || err == nil {
		return err
	}
	return h.IncusErr(err)
}

func (h GrantHost) note(format string, a ...any) {
	if h.Note != nil {
		h.Note(format, a...)
	}
}

// lookup is LookupGrantee on this host.
func (h GrantHost) lookup(name string) (*Grantee, error) { return LookupGrantee(name, h.IncusDir) }

// grantState is what grant and doctor read of one user's grant.
type grantState struct {
	g         *Grantee
	placement incus.Profile // the default project's placement profile
	plan      Grant
	project   *incus.Project // nil: none yet
	cert      []byte         // the user's certificate in incus-user's directory (nil: none)
	trusted   []incus.Certificate
	bridge    *incus.Network // incus-user's private bridge (nil: none)
	instances []incus.Instance
}

// readGrant reads everything a grant of g acts on. It changes nothing.
func (h GrantHost) readGrant(ctx context.Context, g *Grantee) (*grantState, error) {
	c := h.Client
	s := &grantState{g: g}
	name := h.Placement
	p, err := c.InProject("default").Profile(ctx, name)
	if err != nil {
		if incus.IsNotFound(err) {
			return nil, &GrantError{Why: GrantNoPlacement, User: g.Name, Project: g.Project(), Err: fmt.Errorf("placement profile %s: %w", name, err)}
		}
		return nil, h.incusErr(err)
	}
	s.placement = *p
	br := PlacementBridge(*p)
	if br == "" {
		return nil, &GrantError{Why: GrantPlacementNoNIC, User: g.Name, Project: g.Project(), Err: fmt.Errorf("placement profile %s has no NIC on a network", name)}
	}
	s.plan = Grant{User: g.Name, UID: g.UID, Bridge: br}
	if s.project, err = c.ProjectByName(ctx, g.Project()); err != nil {
		if !incus.IsNotFound(err) {
			return nil, &GrantError{Why: GrantNotAdmin, User: g.Name, Project: g.Project(), Err: h.incusErr(err)}
		}
		s.project = nil
	} else {
		s.plan.Limits = RecordedLimits(s.project.Config)
	}
	if s.cert, err = g.userCert(); err != nil {
		return nil, err
	}
	certs, err := c.Certificates(ctx)
	if err != nil {
		return nil, h.incusErr(err)
	}
	fp := PemFingerprint(s.cert)
	for _, ct := range certs {
		if ct.Name == g.CertName() || (fp != "" && ct.Fingerprint == fp) || (ct.Restricted && len(ct.Projects) == 1 && ct.Projects[0] == g.Project()) {
			s.trusted = append(s.trusted, ct)
		}
	}
	if n, err := c.InProject("default").Network(ctx, UserBridge(g.UID)); err == nil && isIncusUserBridge(n) {
		s.bridge = n
	}
	if s.project != nil {
		if s.instances, err = c.InProject(g.Project()).ListInstances(ctx); err != nil {
			return nil, h.incusErr(err)
		}
	}
	return s, nil
}

// isIncusUserBridge: the network is the one incus-user made for a user (its description
// says so), not an operator's network of the same name.
func isIncusUserBridge(n *incus.Network) bool {
	return strings.HasPrefix(n.Description, "Network for user restricted project")
}

// PemFingerprint is the trust store's fingerprint of a PEM certificate ("" for none).
func PemFingerprint(b []byte) string {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return ""
	}
	return incus.Fingerprint(blk.Bytes)
}
