package main

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

func newGrantCmd(e *env) *cobra.Command {
	var limitFlags []string
	var noLimits, portNames bool
	cmd := &cobra.Command{
		Use:     "grant USER",
		Short:   "give a local user their own confined Incus project for boxes (the restricted tier)",
		GroupID: groupHost,
		Long: `Give an unprivileged local user the restricted tier: their own Incus project, user-UID,
reached through incus-user's socket (INCUS_DIR/` + host.UserSocket + `). Run by the operator (root, or
a member of incus-admin), after 'box setup-host'.

As themselves the user then runs box new, box shell, box list, ... with box's usual tag
boundary. Their project may attach a box only to box's bridge (the placement profile's
network) and holds only box's placement profile (a copy of the operator's) and an empty
default profile; host paths, nesting, privileged containers, raw and low-level config,
GPUs and other host devices, proxy devices and cluster targets are refused by incusd.
They see no other project: not another user's boxes, not the host's other instances.
Their images are their project's own (an alias they make never reaches another user's box
new); snapshots and backups are allowed.

incus-user sets a new user up itself, loosely (its own NAT bridge, host paths under their
home, nesting), and knows only the projects it made or saw at its start. So box grant
makes the user's first contact with incus-user itself, as the user, before they may reach
its socket; incus-user makes the project and the user's certificate (INCUS_DIR/users/UID,
root's: the user never holds the key, which the trust store confines to the project); box
converges both at once, removes incus-user's private bridge, and adds the user to the
socket's group. A project incus-user made before is converged the same way (refused
while it holds instances box did not make).

Re-running converges again (after a box upgrade, or to repair what 'box doctor' reports).
The user's new group takes effect at their next login.

On a kernel without nft bridge meta the host firewall's box-to-box drop matches the
bridge's ports by name, and incusd lets a granted user name their box's port (NIC
host_name); br_netfilter (bridge-nf-call-iptables=1) still drops their switched IPv4 in
the inet hooks. Without both, box grant refuses unless --port-name-firewall says the
operator takes that gap (box drill reports it).

--limit caps the project (limits.NAME in Incus: instances, containers, virtual-machines,
cpu, memory, disk, processes), so one user cannot starve the others; box records the
limits it set and doctor checks them; --no-limits removes them.`,
		Example: `  sudo box grant alice
  sudo box grant alice --limit instances=5 --limit memory=16GiB
  sudo -u alice box new --name work    # alice's box, in project user-UID`,
		Args:    boxArgs(1, "one user"),
		PreRunE: e.refuseRemoteArgs,
		RunE: onLocalHost(e, func(ctx context.Context, c *incus.Client, args []string) error {
			limits := map[string]string{}
			for _, l := range limitFlags {
				k, v, err := host.ParseGrantLimit(l)
				if err != nil {
					return usagef("for example --limit instances=5 --limit memory=16GiB", "%s", err)
				}
				limits[k] = v
			}
			if noLimits && len(limitFlags) > 0 {
				return usagef("pick one", "--limit and --no-limits exclude each other")
			}
			gap, gapErr := portNameGap()
			return runGrant(ctx, e, c, args[0], limits, noLimits || len(limitFlags) > 0, portNameFact{gap, gapErr, portNames})
		}),
	}
	cmd.Flags().BoolVar(&noLimits, "no-limits", false, "remove the limits an earlier box grant --limit set")
	cmd.Flags().BoolVar(&portNames, "port-name-firewall", false,
		"grant on a host where a granted user can name their box's bridge port out of the box-to-box drop (no nft bridge meta, no br_netfilter; box drill reports it)")
	cmd.Flags().StringArrayVar(&limitFlags, "limit", nil, "a project limit NAME=VALUE (repeatable; NAME: "+strings.Join(host.GrantLimits, ", ")+
		"); given, they replace the limits of an earlier grant, which a grant without --limit keeps")
	return cmd
}

// grantState is what grant and doctor read of one user's grant.
type grantState struct {
	g         *grantee
	placement incus.Profile // the default project's placement profile
	plan      host.Grant
	project   *incus.Project // nil: none yet
	cert      []byte         // the user's certificate in incus-user's directory (nil: none)
	trusted   []incus.Certificate
	bridge    *incus.Network // incus-user's private bridge (nil: none)
	instances []incus.Instance
}

// readGrant reads everything a grant of g acts on. It changes nothing.
func readGrant(ctx context.Context, e *env, c *incus.Client, g *grantee) (*grantState, error) {
	s := &grantState{g: g}
	name := vm.Placement(e.getenv)
	p, err := c.InProject("default").Profile(ctx, name)
	if err != nil {
		if incus.IsNotFound(err) {
			return nil, withHint(fmt.Errorf("placement profile %s: %w", name, err), "build the isolation stack first: box setup-host")
		}
		return nil, vmErr(e, err)
	}
	s.placement = *p
	br := host.PlacementBridge(*p)
	if br == "" {
		return nil, withHint(fmt.Errorf("placement profile %s has no NIC on a network", name), "repair it: box setup-host (box doctor says what is wrong)")
	}
	s.plan = host.Grant{User: g.Name, UID: g.UID, Bridge: br}
	if s.project, err = c.ProjectByName(ctx, g.project()); err != nil {
		if !incus.IsNotFound(err) {
			return nil, withHint(vmErr(e, err), "box grant speaks to incusd as its administrator: run it as root, or as a member of incus-admin")
		}
		s.project = nil
	} else {
		s.plan.Limits = host.RecordedLimits(s.project.Config)
	}
	if s.cert, err = g.userCert(); err != nil {
		return nil, err
	}
	certs, err := c.Certificates(ctx)
	if err != nil {
		return nil, vmErr(e, err)
	}
	fp := pemFingerprint(s.cert)
	for _, ct := range certs {
		if ct.Name == g.certName() || (fp != "" && ct.Fingerprint == fp) || (ct.Restricted && len(ct.Projects) == 1 && ct.Projects[0] == g.project()) {
			s.trusted = append(s.trusted, ct)
		}
	}
	if n, err := c.InProject("default").Network(ctx, host.UserBridge(g.UID)); err == nil && isIncusUserBridge(n) {
		s.bridge = n
	}
	if s.project != nil {
		if s.instances, err = c.InProject(g.project()).ListInstances(ctx); err != nil {
			return nil, vmErr(e, err)
		}
	}
	return s, nil
}

// isIncusUserBridge: the network is the one incus-user made for a user (its description
// says so), not an operator's network of the same name.
func isIncusUserBridge(n *incus.Network) bool {
	return strings.HasPrefix(n.Description, "Network for user restricted project")
}

// pemFingerprint is the trust store's fingerprint of a PEM certificate ("" for none).
func pemFingerprint(b []byte) string {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return ""
	}
	return incus.Fingerprint(blk.Bytes)
}

// ErrForeignProject: the user's project exists and is not one box grant can converge.
var ErrForeignProject = errors.New("project not made by box grant")

// portNameFact is host.PortNameGap on this host.
type portNameFact struct {
	gap bool
	err error
	// accepted: --port-name-firewall, the operator takes the gap.
	accepted bool
}

// portNameGap reads the host facts of host.PortNameGap: nft bridge meta, and whether
// switched IPv4 passes the inet hooks (br_netfilter).
func portNameGap() (bool, error) {
	meta, err := host.DetectBridgeMeta()
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(host.BridgeNFPath)
	return host.PortNameGap(meta, err == nil && strings.TrimSpace(string(b)) == "1"), nil
}

// ErrPortNameFirewall: on this host a granted user can name their box out of the
// box-to-box drop.
var ErrPortNameFirewall = errors.New("this host's box-to-box drop can be escaped by a granted user: the kernel has no nft bridge meta (CONFIG_NFT_BRIDGE_META), so the firewall matches the bridge's ports by name, which incusd lets a restricted project set (NIC host_name), and switched IPv4 skips the inet hooks (" + host.BridgeNFPath + " is not 1)")

func runGrant(ctx context.Context, e *env, c *incus.Client, name string, limits map[string]string, setLimits bool, meta portNameFact) error {
	g, err := e.lookupGrantee(name)
	if err != nil {
		return err
	}
	if meta.err != nil {
		return withHint(fmt.Errorf("box grant: %w", meta.err), "box grant checks the host firewall's kernel support first: run it as root")
	}
	if meta.gap && !meta.accepted {
		return withHint(ErrPortNameFirewall, "load br_netfilter (modprobe br_netfilter; sysctl net.bridge.bridge-nf-call-iptables=1), or use a kernel with CONFIG_NFT_BRIDGE_META; --port-name-firewall grants anyway (box drill's grant:USER:port-name row then reports the gap)")
	}
	if err := g.needSocket(); err != nil {
		return err
	}
	s, err := readGrant(ctx, e, c, g)
	if err != nil {
		return err
	}
	// Every precondition before any change.
	if s.project != nil {
		if owner, ok := s.project.Config[host.GrantKey]; ok && owner != g.Name {
			return withHint(fmt.Errorf("project %s: %w: it is %s's grant (uid %d is now %s)", g.project(), ErrForeignProject, owner, g.UID, g.Name),
				"the account's uid was reused: box revoke "+owner+" --purge first (or delete the project with incus)")
		}
		if _, ok := s.project.Config[host.GrantKey]; !ok && len(s.instances) > 0 {
			names := make([]string, len(s.instances))
			for i, in := range s.instances {
				names[i] = in.Name
			}
			return withHint(fmt.Errorf("project %s: %w: incus-user made it, and it holds %s", g.project(), ErrForeignProject, strings.Join(names, ", ")),
				"box grant converges no instance it did not make: delete them (incus delete --project "+g.project()+" NAME) or move them away, then run box grant again")
		}
	}
	if s.project == nil {
		// incus-user's setup below creates that network; an operator's of the same name
		// would fail it.
		if n, err := c.InProject("default").Network(ctx, host.UserBridge(g.UID)); err == nil && !isIncusUserBridge(n) {
			return withHint(fmt.Errorf("network %s exists: incus-user names %s's private bridge so, and its setup would fail", n.Name, g.Name),
				"rename or delete that network, then run box grant again")
		}
	}
	if s.bridge != nil {
		for _, u := range s.bridge.UsedBy {
			if u != "/1.0/profiles/default?project="+g.project() {
				return withHint(fmt.Errorf("network %s (incus-user's private bridge for %s) is used by %s", s.bridge.Name, g.Name, u),
					"box grant removes that bridge (it has none of box's isolation): detach it from "+u+", then run box grant again")
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
				return vmErr(e, err)
			}
		}
		if err := g.touchIncusUser(ctx); err != nil {
			return withHint(err, "is incus-user healthy? (journalctl -u incus-user; it needs the user in getent passwd and a storage pool named default)")
		}
		if s, err = readGrant(ctx, e, c, g); err != nil {
			return err
		}
		if s.project == nil {
			return withHint(fmt.Errorf("incus-user did not set %s up: no project %s", g.Name, g.project()), "journalctl -u incus-user says why")
		}
	}
	if setLimits {
		s.plan.Limits = limits
	}
	uc := c.InProject(g.project())
	profiles := host.GrantProfiles(s.placement)
	// The default profile first: its NIC on the private bridge would block the narrowing
	// of the networks.
	if err := uc.ReplaceProfile(ctx, profiles[0]); err != nil {
		return vmErr(e, err)
	}
	if err := c.ReplaceProject(ctx, s.plan.Project()); err != nil {
		return withHint(vmErr(e, err), "incusd refused box's restrictions for the project as it is: fix what it names, then run box grant again")
	}
	for _, p := range profiles {
		err := uc.ReplaceProfile(ctx, p)
		if incus.IsNotFound(err) {
			err = uc.CreateProfileFrom(ctx, p)
		}
		if err != nil {
			return vmErr(e, err)
		}
	}
	if s.bridge != nil {
		if err := c.InProject("default").DeleteNetwork(ctx, s.bridge.Name); err != nil {
			return vmErr(e, err)
		}
	}
	cert := s.cert
	if cert == nil {
		if cert, err = g.writeUserCert(); err != nil {
			return fmt.Errorf("certificate of %s: %w", g.Name, err)
		}
	}
	fp := pemFingerprint(cert)
	found := false
	for _, ct := range s.trusted {
		if ct.Fingerprint == fp {
			found = true
			if err := c.RestrictCertificate(ctx, fp, g.certName(), []string{g.project()}); err != nil {
				return vmErr(e, err)
			}
			continue
		}
		// Another certificate confined to this project (an old one of the user's, or
		// one added by hand): the grant is the user's one key.
		if err := c.DeleteCertificate(ctx, ct.Fingerprint); err != nil {
			return vmErr(e, err)
		}
	}
	if !found {
		if err := c.TrustCertificate(ctx, g.certName(), cert, g.project()); err != nil {
			return vmErr(e, err)
		}
	}
	joined := false
	if !g.inSockGroup() {
		if err := g.setSockGroup(true); err != nil {
			return withHint(err, "add "+g.Name+" to group "+g.SockGroup+" yourself; the rest of the grant is in place")
		}
		joined = true
	}
	verb := "granted"
	if !fresh {
		verb = "converged"
	}
	note(e, "%s: %s (uid %d) has project %s: network %s only, profile %s, no host paths, no nesting, no privileged or raw config",
		verb, g.Name, g.UID, g.project(), s.plan.Bridge, s.placement.Name)
	if joined {
		note(e, "%s joined group %s (the key to %s): it takes effect at their next login", g.Name, g.SockGroup, g.Socket)
	}
	note(e, "as %s, box finds that socket and project by itself: box new --name work", g.Name)
	return nil
}

// refuseRemoteArgs is refuseRemote as a PreRunE: grant and revoke act on this host's
// incusd and incus-user (peer credentials, files in INCUS_DIR).
func (e *env) refuseRemoteArgs(cmd *cobra.Command, _ []string) error { return e.refuseRemote(cmd) }

// onLocalHost runs f with the local incusd's administrator client, cancelled on Ctrl-C.
func onLocalHost(e *env, f func(ctx context.Context, c *incus.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		ctx, cancel := hostContext()
		defer cancel()
		c := hostClient(e)
		defer c.Close()
		return f(ctx, c, args)
	}
}
