package host

// box revoke's sequence: access first, always (the certificate untrusted, the key
// removed, the socket's group left), then with purge everything the project holds,
// checked before anything is deleted.

import (
	"context"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// Revoke takes back what Grant gave name; purge: and deletes their boxes and project.
func (h GrantHost) Revoke(ctx context.Context, name string, purge bool) error {
	c := h.Client
	g, err := h.lookup(name)
	if err != nil {
		// An account deleted before its grant: the project still names it.
		if g = h.goneGrantee(ctx, name); g == nil {
			return err
		}
	}
	s, err := h.readGrant(ctx, g)
	if err != nil {
		return err
	}
	if s.project == nil && len(s.trusted) == 0 && s.cert == nil {
		return &GrantError{Why: RevokeNoGrant, User: g.Name, Project: g.Project(), Err: fmt.Errorf("%s has no grant (no project %s, no certificate)", g.Name, g.Project())}
	}
	if s.project != nil {
		if owner, ok := s.project.Config[GrantKey]; !ok || owner != g.Name {
			return &GrantError{Why: RevokeNotGranted, User: g.Name, Project: g.Project(), Err: fmt.Errorf("project %s: %w", g.Project(), ErrForeignProject)}
		}
	}
	// Access first, whatever the project holds: a revocation never depends on what the
	// revoked user left in it (an instance box did not mint must not keep them in). From
	// here incusd refuses the user.
	for _, ct := range s.trusted {
		if err := c.DeleteCertificate(ctx, ct.Fingerprint); err != nil {
			return h.incusErr(err)
		}
	}
	if err := g.dropUserCert(); err != nil {
		return fmt.Errorf("incus-user's record of %s: %w", g.Name, err)
	}
	left := false
	if g.InSuppGroup() {
		if err := g.setSockGroup(false); err != nil {
			return errs.WithHint(err, "remove "+g.Name+" from group "+g.SockGroup+" yourself; the certificate is already untrusted")
		}
		left = true
	}
	h.note("revoked: %s (uid %d): certificate untrusted, key removed%s", g.Name, g.UID, map[bool]string{true: ", left group " + g.SockGroup}[left])
	if !purge {
		if s.project != nil {
			h.note("project %s and its %d instance(s) stay: box revoke %s --purge deletes them", g.Project(), len(s.instances), g.Name)
		}
		return nil
	}
	if s.project == nil {
		return nil
	}
	// --purge: everything it will delete is listed first; what it must not delete stops
	// the purge (access is gone already, and the refusal says so).
	uc := c.InProject(g.Project())
	var boxesToGo []incus.Instance
	var volumes [][2]string
	var profiles, images []string
	var foreign []string
	for _, in := range s.instances {
		if !incus.IsBox(in) {
			foreign = append(foreign, in.Name)
			continue
		}
		boxesToGo = append(boxesToGo, in)
	}
	if len(foreign) > 0 {
		return &GrantError{Why: RevokeForeignInstances, User: g.Name, Project: g.Project(),
			Err: fmt.Errorf("%s's access is revoked; the purge stopped before deleting anything: project %s holds instances box did not mint: %s", g.Name, g.Project(), strings.Join(foreign, ", "))}
	}
	// Only what the project owns: with a feature off, the API answers with the
	// default project's images, profiles or volumes.
	own := func(feature string) bool { return s.project.Config[feature] == "true" }
	pools, err := c.StoragePools(ctx)
	if err != nil {
		return h.incusErr(err)
	}
	if !own("features.storage.volumes") {
		pools = nil
	}
	for _, pool := range pools {
		vols, err := uc.CustomVolumes(ctx, pool)
		if err != nil {
			return h.incusErr(err)
		}
		for _, v := range vols {
			volumes = append(volumes, [2]string{pool, v})
		}
		var buckets []string
		if err := uc.Query(ctx, "GET", "/storage-pools/"+pool+"/buckets", nil, &buckets); err == nil && len(buckets) > 0 {
			return &GrantError{Why: RevokeBuckets, User: g.Name, Project: g.Project(), Pool: pool,
				Err: fmt.Errorf("%s's access is revoked; the purge stopped before deleting anything: project %s holds storage buckets: %s", g.Name, g.Project(), strings.Join(buckets, ", "))}
		}
	}
	if own("features.images") {
		if images, err = uc.ImageFingerprints(ctx); err != nil {
			return h.incusErr(err)
		}
	}
	if own("features.profiles") {
		ps, err := uc.Profiles(ctx)
		if err != nil {
			return h.incusErr(err)
		}
		for _, p := range ps {
			if p.Name != "default" {
				profiles = append(profiles, p.Name)
			}
		}
	}

	for _, in := range boxesToGo {
		// The user may have protected their box against deletion; the purge is the
		// operator's word over theirs.
		if in.Config["security.protection.delete"] != "" {
			if err := uc.SetConfig(ctx, in.Name, nil, "security.protection.delete"); err != nil {
				return h.incusErr(err)
			}
		}
		if in.Running() {
			if err := uc.Stop(ctx, in.Name, 0, true); err != nil {
				return h.incusErr(err)
			}
		}
		if err := uc.Delete(ctx, in.Name); err != nil {
			return h.incusErr(err)
		}
	}
	for _, v := range volumes {
		if err := uc.DeleteCustomVolume(ctx, v[0], v[1]); err != nil {
			return h.incusErr(err)
		}
	}
	for _, fp := range images {
		if err := uc.DeleteImage(ctx, fp); err != nil {
			return h.incusErr(err)
		}
	}
	for _, p := range profiles {
		if err := uc.RemoveProfile(ctx, p); err != nil {
			return h.incusErr(err)
		}
	}
	if err := c.DeleteProject(ctx, g.Project()); err != nil {
		return h.incusErr(err)
	}
	if _, err := c.ProjectByName(ctx, g.Project()); !incus.IsNotFound(err) {
		return fmt.Errorf("project %s is still there after its deletion (%v)", g.Project(), err)
	}
	h.note("purged: %d box(es), %d volume(s), %d image(s), project %s", len(boxesToGo), len(volumes), len(images), g.Project())
	return nil
}

// goneGrantee is the grantee of a granted project whose account is gone (nil when no
// project is granted to name).
func (h GrantHost) goneGrantee(ctx context.Context, name string) *Grantee {
	ps, err := h.Client.Projects(ctx)
	if err != nil {
		return nil
	}
	for _, p := range ps {
		if uid, ok := ProjectOfUID(p.Name); ok && p.Config[GrantKey] == name {
			return GranteeOf(name, uid, -1, nil, h.IncusDir)
		}
	}
	return nil
}
