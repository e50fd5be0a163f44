package benchrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

// The Redis Cluster scenario: the master holding the mesh's descriptors,
// with a replica, killed under load.

// faultCluster starts a Redis Cluster, stopped when the rig closes.
func faultCluster(r *faultRig) (*locationtest.RedisCluster, error) {
	dir, err := r.tempDir("zlink-faults-cluster-")
	if err != nil {
		return nil, err
	}
	c, err := locationtest.LaunchRedisCluster(dir)
	if err != nil {
		return nil, err
	}
	r.onClose(c.Close)
	return c, nil
}

// meshMaster is the master serving the slot of the mesh's descriptors:
// the one that answers EXISTS on its hash tag instead of redirecting.
func meshMaster(c *locationtest.RedisCluster) (*locationtest.RedisServer, error) {
	for _, m := range c.Nodes() {
		_, err := m.Do("EXISTS", "{mesh:"+faultMesh+"}:probe")
		if err == nil {
			return m, nil
		}
		if !strings.Contains(err.Error(), "MOVED") {
			return nil, err
		}
	}
	return nil, fmt.Errorf("faults: no master serves the slot of {mesh:%s}", faultMesh)
}

// clusterStore opens a Location Store of its own on the cluster (as a
// process of its own would) that re-reads the masters' replicas often;
// the rig closes it.
func clusterStore(r *faultRig, c *locationtest.RedisCluster) (location.Store, error) {
	cfg, err := location.ParseRedisURL(c.URL())
	if err != nil {
		return nil, err
	}
	cfg.Prefix = "faults"
	cfg.PollInterval = 100 * time.Millisecond
	cfg.DialTimeout = time.Second
	cfg.OpTimeout = 2 * time.Second
	cfg.ReplicaTimeout = 500 * time.Millisecond
	cfg.ReplicaRefresh = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.onClose(func() { _ = s.Close() })
	return s, nil
}

// faultClusterWithReplica starts a Redis Cluster and a replica of the
// master serving the mesh's descriptors (meshMaster).
func faultClusterWithReplica(r *faultRig) (c *locationtest.RedisCluster, m, replica *locationtest.RedisServer, err error) {
	if c, err = faultCluster(r); err != nil {
		return nil, nil, nil, err
	}
	if m, err = meshMaster(c); err != nil {
		return nil, nil, nil, err
	}
	if replica, err = c.LaunchReplica(m); err != nil {
		return nil, nil, nil, err
	}
	return c, m, replica, nil
}

func runClusterMasterKill(ctx context.Context, r *faultRig, _ bool) (out faultOutcome, err error) {
	c, m, replica, err := faultClusterWithReplica(r)
	if err != nil {
		return out, err
	}
	node := func(prefix string, server bool) (*zlink.Host, location.Store, error) {
		store, err := clusterStore(r, c)
		if err != nil {
			return nil, nil, err
		}
		h, err := r.host(autoOptions(store, prefix, server))
		return h, store, err
	}
	var nodes []*routemesh.Node
	for _, server := range []bool{true, true, false} {
		prefix := map[bool]string{true: "s", false: "c"}[server]
		h, _, err := node(prefix, server)
		if err != nil {
			return out, err
		}
		nodes = append(nodes, h.Mesh(faultMesh))
	}
	s1, s2, cli := nodes[0], nodes[1], nodes[2]
	if err := waitUntil(ctx, "the client knowing both Servers", 15*time.Second, func() bool { return peerReady(cli, s1.RID()) && peerReady(cli, s2.RID()) }); err != nil {
		return out, err
	}
	out.base, out.heap = baseline()
	out.load = startFaultLoad(cli, 4, nil, time.Second)
	if err := waitUntil(ctx, "both Servers serving", 15*time.Second, func() bool { return out.load.Since(s1.RID()) > 20 && out.load.Since(s2.RID()) > 20 }); err != nil {
		return out, err
	}
	killAt := time.Now()
	if err := c.FailMaster(m, replica); err != nil {
		return out, err
	}
	out.detect = time.Since(killAt)
	out.load.Mark()
	if err := waitUntil(ctx, "both Servers serving after the promotion", 15*time.Second, func() bool {
		return out.load.Since(s1.RID()) > 50 && out.load.Since(s2.RID()) > 50
	}); err != nil {
		return out, err
	}
	// A Server started after the promotion is discovered; it stops again
	// before the end, so the goroutines compare with the baseline.
	startAt := time.Now()
	h3, store3, err := node("s", true)
	if err != nil {
		return out, err
	}
	s3 := h3.Mesh(faultMesh)
	if err := waitUntil(ctx, "the Server started after the promotion serving", 15*time.Second, func() bool { return out.load.Since(s3.RID()) > 20 }); err != nil {
		return out, err
	}
	out.recover = time.Since(startAt)
	out.load.Stop()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_ = h3.Stop(sctx)
	cancel()
	_ = store3.Close()
	out.note = fmt.Sprintf("master=%s replica=%s (detect: the replica promoted; recover: a Server started after it serving)", m.Addr(), replica.Addr())
	return out, nil
}
