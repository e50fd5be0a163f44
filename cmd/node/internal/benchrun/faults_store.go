package benchrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

// The scenarios on a Location Store: a Server killed and restarted under
// a new RID (automatic topology), and the store itself going away.

// faultRedis starts a redis-server for a scenario, stopped when the rig
// closes.
func faultRedis(r *faultRig) (*locationtest.RedisServer, error) {
	dir, err := r.tempDir("zlink-faults-redis-")
	if err != nil {
		return nil, err
	}
	srv, err := fault.StartRedis(dir)
	if err != nil {
		return nil, err
	}
	r.onClose(srv.Stop)
	return srv, nil
}

// faultStore opens a Redis Location Store on addr, closed when the rig
// closes.
func faultStore(r *faultRig, addr string) (location.Store, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, location.RedisConfig{Addr: addr, PollInterval: 100 * time.Millisecond,
		DialTimeout: time.Second, OpTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	r.onClose(func() { _ = s.Close() })
	return s, nil
}

// autoOptions is an automatic node of faultMesh on store with RID prefix
// prefix, a Server of channel "echo" or its Client.
func autoOptions(store location.Store, prefix string, server bool) *zlink.Options {
	o := zlink.NewOptions().SetLocationStore(store)
	b := o.AddRouteMesh(faultMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(faultLiveness).ConfigureDiscovery(faultDiscovery)
	if server {
		b.Channel("echo").Server().HandleRequest("echo", faultEcho)
	} else {
		b.Channel("echo").Client()
	}
	return o
}

func runKill9NewRID(ctx context.Context, r *faultRig, _ bool) (out faultOutcome, err error) {
	srv, err := faultRedis(r)
	if err != nil {
		return out, err
	}
	store, err := faultStore(r, srv.Addr())
	if err != nil {
		return out, err
	}
	h1, err := r.host(autoOptions(store, "s", true))
	if err != nil {
		return out, err
	}
	s1 := h1.Mesh(faultMesh).RID()
	child, err := startFaultChild(r, "ZLINK_FAULTS_REDIS="+srv.Addr(), "ZLINK_FAULTS_PREFIX=k")
	if err != nil {
		return out, err
	}
	hc, err := r.host(autoOptions(store, "c", false))
	if err != nil {
		return out, err
	}
	cli := hc.Mesh(faultMesh)
	if err := waitUntil(ctx, "the client knowing both Servers", 15*time.Second, func() bool { return peerReady(cli, s1) && peerReady(cli, child.rid) }); err != nil {
		return out, err
	}
	out.base, out.heap = baseline()
	out.load = startFaultLoad(cli, 4, nil, time.Second)
	if err := waitUntil(ctx, "both Servers serving", 15*time.Second, func() bool { return out.load.Since(s1) > 20 && out.load.Since(child.rid) > 20 }); err != nil {
		return out, err
	}
	killAt := time.Now()
	child.Kill()
	if err := waitUntil(ctx, "the client losing the killed Server", 15*time.Second, func() bool { return !peerReady(cli, child.rid) }); err != nil {
		return out, err
	}
	out.detect = time.Since(killAt)
	restartAt := time.Now()
	fresh, err := startFaultChild(r, "ZLINK_FAULTS_REDIS="+srv.Addr(), "ZLINK_FAULTS_PREFIX=k")
	if err != nil {
		return out, err
	}
	out.load.Mark()
	if err := waitUntil(ctx, "the new RID taken into selection", 15*time.Second, func() bool { return out.load.Since(fresh.rid) > 20 }); err != nil {
		return out, err
	}
	out.recover = time.Since(restartAt)
	if err := waitUntil(ctx, "the old RID gone", 15*time.Second, func() bool {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := store.GetDescriptor(dctx, faultMesh, child.rid)
		st, serr := cli.Status(dctx)
		_, listed := st.Peer(child.rid)
		return errors.Is(err, location.ErrNotFound) && serr == nil && !listed
	}); err != nil {
		return out, err
	}
	out.note = fmt.Sprintf("old=%s new=%s gone_after=%v (recover counts from the restart, process start included)",
		child.rid, fresh.rid, time.Since(killAt).Round(time.Millisecond))
	return out, nil
}

func runRedisDown(ctx context.Context, r *faultRig, quick bool) (out faultOutcome, err error) {
	down := 10 * time.Second
	if quick {
		down = 2 * time.Second
	}
	srv, err := faultRedis(r)
	if err != nil {
		return out, err
	}
	store, err := faultStore(r, srv.Addr())
	if err != nil {
		return out, err
	}
	var nodes []*routemesh.Node
	for _, server := range []bool{true, true, false} {
		prefix := "s"
		if !server {
			prefix = "c"
		}
		h, err := r.host(autoOptions(store, prefix, server))
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
	downAt := time.Now()
	srv.Stop()
	out.load.Mark()
	// A Server started during the outage; stopped again before the end,
	// so the goroutines compare with the baseline.
	h3, err := zlink.Start(ctx, autoOptions(store, "s", true))
	if err != nil {
		return out, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h3.Stop(sctx)
	}()
	s3 := h3.Mesh(faultMesh)
	if err := waitUntil(ctx, "the outage's end", down+15*time.Second, func() bool { return time.Since(downAt) >= down }); err != nil {
		return out, err
	}
	if out.load.Since(s1.RID()) == 0 || out.load.Since(s2.RID()) == 0 || out.load.Since(s3.RID()) != 0 {
		return out, fmt.Errorf("during the outage: s1 served %d, s2 %d, the new Server %d", out.load.Since(s1.RID()), out.load.Since(s2.RID()), out.load.Since(s3.RID()))
	}
	upAt := time.Now()
	if err := srv.Start(); err != nil {
		return out, err
	}
	if err := waitUntil(ctx, "every descriptor republished", 15*time.Second, func() bool {
		for _, n := range []*routemesh.Node{s1, s2, s3, cli} {
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := store.GetDescriptor(dctx, faultMesh, n.RID())
			cancel()
			if err != nil {
				return false
			}
		}
		return true
	}); err != nil {
		return out, err
	}
	republished := time.Since(upAt)
	if err := waitUntil(ctx, "the Server started during the outage serving", 15*time.Second, func() bool { return out.load.Since(s3.RID()) > 20 }); err != nil {
		return out, err
	}
	out.recover = time.Since(upAt)
	out.load.Stop()
	out.note = fmt.Sprintf("down=%v republished_after=%v (recover: the Server started during the outage serving)", down, republished.Round(time.Millisecond))
	return out, nil
}
