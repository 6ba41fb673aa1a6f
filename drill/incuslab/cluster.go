package incuslab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	return nil
}
