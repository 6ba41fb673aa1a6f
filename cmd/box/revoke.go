package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

func newRevokeCmd(e *env) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:     "revoke USER [--purge]",
		Short:   "take a user's restricted tier back (--purge: and their boxes and project)",
		GroupID: groupHost,
		Long: `Take back what 'box grant USER' gave: the user's certificate leaves the trust store
(incusd refuses them from that moment: through incus-user they are an untrusted client),
its key is removed from INCUS_DIR/users/UID (the directory stays: without it incus-user
would set the user up again, on its own loose defaults) and they leave the socket's
group. Their boxes and project stay, stopped or running, and a new 'box grant' gives
them back.

--purge also deletes the project and everything in it: every box (with its snapshots),
their images, profiles and custom volumes. It checks first and changes nothing when the project
holds what box does not delete: an instance box did not mint (the tag boundary), or a
storage bucket.`,
		Example: `  sudo box revoke alice
  sudo box revoke alice --purge     # and delete alice's boxes and project`,
		Args:    boxArgs(1, "one user"),
		PreRunE: e.refuseRemoteArgs,
		RunE: onLocalHost(e, func(ctx context.Context, c *incus.Client, args []string) error {
			return runRevoke(ctx, e, c, args[0], purge)
		}),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also delete the user's boxes, snapshots, volumes and project")
	return cmd
}

func runRevoke(ctx context.Context, e *env, c *incus.Client, name string, purge bool) error {
	g, err := e.lookupGrantee(name)
	if err != nil {
		// An account deleted before its grant: the project still names it.
		if g = goneGrantee(ctx, e, c, name); g == nil {
			return err
		}
	}
	s, err := readGrant(ctx, e, c, g)
	if err != nil {
		return err
	}
	if s.project == nil && len(s.trusted) == 0 && s.cert == nil {
		return withHint(fmt.Errorf("%s has no grant (no project %s, no certificate)", g.Name, g.project()), "box doctor lists the grants of this host")
	}
	if s.project != nil {
		if owner, ok := s.project.Config[host.GrantKey]; !ok || owner != g.Name {
			return withHint(fmt.Errorf("project %s: %w", g.project(), ErrForeignProject),
				"box revoke takes back only what box grant gave: run box grant "+g.Name+" first to take the project over, or remove it with incus")
		}
	}
	// --purge: everything it will delete is listed first; what it must not delete stops it.
	uc := c.InProject(g.project())
	var boxesToGo []incus.Instance
	var volumes [][2]string
	var profiles, images []string
	if purge && s.project != nil {
		var foreign []string
		for _, in := range s.instances {
			if !incus.IsBox(in) {
				foreign = append(foreign, in.Name)
				continue
			}
			boxesToGo = append(boxesToGo, in)
		}
		if len(foreign) > 0 {
			return withHint(fmt.Errorf("project %s holds instances box did not mint: %s", g.project(), strings.Join(foreign, ", ")),
				"box deletes only its own boxes: delete those with incus (incus delete --project "+g.project()+" NAME), then run box revoke --purge again")
		}
		// Only what the project owns: with a feature off, the API answers with the
		// default project's images, profiles or volumes.
		own := func(feature string) bool { return s.project.Config[feature] == "true" }
		pools, err := c.StoragePools(ctx)
		if err != nil {
			return vmErr(e, err)
		}
		if !own("features.storage.volumes") {
			pools = nil
		}
		for _, pool := range pools {
			vols, err := uc.CustomVolumes(ctx, pool)
			if err != nil {
				return vmErr(e, err)
			}
			for _, v := range vols {
				volumes = append(volumes, [2]string{pool, v})
			}
			var buckets []string
			if err := uc.Query(ctx, "GET", "/storage-pools/"+pool+"/buckets", nil, &buckets); err == nil && len(buckets) > 0 {
				return withHint(fmt.Errorf("project %s holds storage buckets: %s", g.project(), strings.Join(buckets, ", ")),
					"delete them with incus (incus storage bucket delete --project "+g.project()+" "+pool+" NAME), then run box revoke --purge again")
			}
		}
		if own("features.images") {
			if images, err = uc.ImageFingerprints(ctx); err != nil {
				return vmErr(e, err)
			}
		}
		if own("features.profiles") {
			ps, err := uc.Profiles(ctx)
			if err != nil {
				return vmErr(e, err)
			}
			for _, p := range ps {
				if p.Name != "default" {
					profiles = append(profiles, p.Name)
				}
			}
		}
	}

	// Access first: from here incusd refuses the user.
	for _, ct := range s.trusted {
		if err := c.DeleteCertificate(ctx, ct.Fingerprint); err != nil {
			return vmErr(e, err)
		}
	}
	if err := g.dropUserCert(); err != nil {
		return fmt.Errorf("incus-user's record of %s: %w", g.Name, err)
	}
	left := false
	if g.inSuppGroup() {
		if err := g.setSockGroup(false); err != nil {
			return withHint(err, "remove "+g.Name+" from group "+g.SockGroup+" yourself; the certificate is already untrusted")
		}
		left = true
	}
	note(e, "revoked: %s (uid %d): certificate untrusted, key removed%s", g.Name, g.UID, map[bool]string{true: ", left group " + g.SockGroup}[left])
	if !purge {
		if s.project != nil {
			note(e, "project %s and its %d instance(s) stay: box revoke %s --purge deletes them", g.project(), len(s.instances), g.Name)
		}
		return nil
	}
	if s.project == nil {
		return nil
	}
	for _, in := range boxesToGo {
		// The user may have protected their box against deletion; the purge is the
		// operator's word over theirs.
		if in.Config["security.protection.delete"] != "" {
			if err := uc.SetConfig(ctx, in.Name, nil, "security.protection.delete"); err != nil {
				return vmErr(e, err)
			}
		}
		if in.Running() {
			if err := uc.Stop(ctx, in.Name, 0, true); err != nil {
				return vmErr(e, err)
			}
		}
		if err := uc.Delete(ctx, in.Name); err != nil {
			return vmErr(e, err)
		}
	}
	for _, v := range volumes {
		if err := uc.DeleteCustomVolume(ctx, v[0], v[1]); err != nil {
			return vmErr(e, err)
		}
	}
	for _, fp := range images {
		if err := uc.DeleteImage(ctx, fp); err != nil {
			return vmErr(e, err)
		}
	}
	for _, p := range profiles {
		if err := uc.RemoveProfile(ctx, p); err != nil {
			return vmErr(e, err)
		}
	}
	if err := c.DeleteProject(ctx, g.project()); err != nil {
		return vmErr(e, err)
	}
	if _, err := c.ProjectByName(ctx, g.project()); !incus.IsNotFound(err) {
		return fmt.Errorf("project %s is still there after its deletion (%v)", g.project(), err)
	}
	note(e, "purged: %d box(es), %d volume(s), %d image(s), project %s", len(boxesToGo), len(volumes), len(images), g.project())
	return nil
}

// goneGrantee is the grantee of a granted project whose account is gone (nil when no
// project is granted to name).
func goneGrantee(ctx context.Context, e *env, c *incus.Client, name string) *grantee {
	ps, err := c.Projects(ctx)
	if err != nil {
		return nil
	}
	for _, p := range ps {
		if uid, ok := host.ProjectOfUID(p.Name); ok && p.Config[host.GrantKey] == name {
			return e.granteeOf(name, uid, -1, nil)
		}
	}
	return nil
}
