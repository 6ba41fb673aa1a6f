package incuslab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// JoinCluster makes leader (a full lab) the first member of a cluster named leaderName,
// listening on leaderAddr (IP:PORT on its end of Link), and joins member (an Empty lab
// on the other end, listening on memberAddr) as memberName, with a join token, as
// 'incus cluster enable', 'incus cluster add' and 'incus admin init' do.
func JoinCluster(ctx context.Context, leader *Lab, leaderName, leaderAddr string, member *Lab, memberName, memberAddr string) error {
	c := leader.Client
	if err := c.Query(ctx, "PATCH", "", map[string]any{"config": map[string]string{
		"core.https_address": leaderAddr, "cluster.https_address": leaderAddr}}, nil); err != nil {
		return fmt.Errorf("leader address: %w", err)
	}
	leader.HTTPSAddress = leaderAddr
	if out, err := leader.incusCLI(ctx, "cluster", "enable", leaderName).CombinedOutput(); err != nil {
		return fmt.Errorf("incus cluster enable %s: %v: %s", leaderName, err, out)
	}
	out, err := leader.incusCLI(ctx, "cluster", "add", memberName, "--quiet").Output()
	if err != nil {
		return fmt.Errorf("incus cluster add %s: %v", memberName, err)
	}
	token := strings.TrimSpace(string(out))
	cert, err := os.ReadFile(filepath.Join(leader.IncusDir, "cluster.crt")) // the cluster's, not server.crt
	if err != nil {
		return err
	}
	join := map[string]any{
		"server_name": memberName, "enabled": true,
		"cluster_address": leaderAddr, "cluster_certificate": string(cert),
		"server_address": memberAddr, "cluster_token": token,
		"member_config": []map[string]string{
			{"entity": "storage-pool", "name": Pool, "key": "source", "value": filepath.Join(member.Dir, "pool")},
		},
	}
	if err := member.Client.Query(ctx, "PUT", "/cluster", join, nil); err != nil {
		return fmt.Errorf("join %s to the cluster: %w", memberName, err)
	}
	member.HTTPSAddress = memberAddr
	// Enable and join each restart the lab's bridge on their member (Incus's
	// networkStartup, cmd/incusd/api_cluster.go), and a restart that fails leaves it
	// "Unavailable" there until incusd retries it a minute later: dnsmasq.Kill kills
	// the old dnsmasq and sleeps 100ms before the new one binds, and if the old one's
	// sockets are not released yet (heavy load) the new one exits with "Address already
	// in use". An instance started there meanwhile fails its NIC's pre-start check
	// (CI: Network "boxlab0" unavailable on this server). The cluster is ready when the
	// bridge is up on every member.
	for m, l := range map[string]*Lab{leaderName: leader, memberName: member} {
		if err := waitNetworkOn(ctx, leader, Network, m, l); err != nil {
			return err
		}
	}
	return nil
}

// networkRetry bounds the wait for a member's network: incusd retries a network that
// failed to start once a minute.
const networkRetry = 3 * time.Minute

// waitNetworkOn asks c (any member's lab) until network name is Created on cluster
// member m, whose lab is l (its local status: GET /1.0/networks/NAME?target=M answers
// "Unavailable" while m failed to start it).
func waitNetworkOn(ctx context.Context, c *Lab, name, m string, l *Lab) error {
	ctx, cancel := context.WithTimeout(ctx, networkRetry)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := c.Client.NetworkOn(ctx, name, m)
		if err == nil && n.Status == "Created" {
			return nil
		}
		select {
		case <-ctx.Done():
			status := "?"
			if n != nil {
				status = n.Status
			}
			return fmt.Errorf("network %s on member %s: status %q (%v) after %s: %w\n%s", name, m, status, err,
				networkRetry, ctx.Err(), tail(filepath.Join(l.Dir, "incusd.log"), 2000))
		case <-tick.C:
		}
	}
}
