package benchrun

import (
	"context"
	"fmt"
	"net"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

// The partition and kill scenarios: one of two Servers goes away under
// load and comes back; the client must carry on with the other and take
// the first back.

func runPartition(oneWay bool) func(context.Context, *faultRig, bool) (faultOutcome, error) {
	return func(ctx context.Context, r *faultRig, quick bool) (out faultOutcome, err error) {
		hold := 5 * time.Second
		if quick {
			hold = time.Second
		}
		var servers [2]*routemesh.Node
		for i := range servers {
			o := zlink.NewOptions()
			o.AddRouteMesh(faultMesh).SetRoutingID(fmt.Sprintf("s%d", i+1)).ConfigureLiveness(faultLiveness).
				Channel("echo").Server().HandleRequest("echo", faultEcho)
			h, err := r.host(o)
			if err != nil {
				return out, err
			}
			servers[i] = h.Mesh(faultMesh)
		}
		proxy, err := fault.New(servers[0].Endpoint())
		if err != nil {
			return out, err
		}
		r.onClose(proxy.Close)
		cli, err := faultClient(r, map[string]string{"s1": proxy.Endpoint(), "s2": servers[1].Endpoint()})
		if err != nil {
			return out, err
		}
		out.base, out.heap = baseline()
		out.load = startFaultLoad(cli, 4, nil, time.Second)
		if err := waitUntil(ctx, "both Servers serving", 15*time.Second, func() bool { return out.load.Since("s1") > 20 && out.load.Since("s2") > 20 }); err != nil {
			return out, err
		}
		faultAt := time.Now()
		if oneWay {
			proxy.CutDown()
		} else {
			proxy.Partition()
		}
		if err := waitUntil(ctx, "the client losing s1", 15*time.Second, func() bool { return !peerReady(cli, "s1") }); err != nil {
			return out, err
		}
		out.detect = time.Since(faultAt)
		out.load.Mark()
		if err := waitUntil(ctx, "the fault's end", hold+15*time.Second, func() bool { return time.Since(faultAt) >= hold }); err != nil {
			return out, err
		}
		if out.load.Since("s2") == 0 || out.load.Since("s1") != 0 {
			return out, fmt.Errorf("during the fault s1 served %d calls, s2 %d", out.load.Since("s1"), out.load.Since("s2"))
		}
		healAt := time.Now()
		proxy.Heal()
		out.load.Mark()
		if err := waitUntil(ctx, "s1 serving again after the heal", 10*time.Second, func() bool { return out.load.Since("s1") > 20 }); err != nil {
			return out, err
		}
		out.recover = time.Since(healAt)
		out.note = fmt.Sprintf("held=%v", hold)
		return out, nil
	}
}

// faultClient starts a Client of channel "echo" with a manual peer per
// RID and waits until they are Ready.
func faultClient(r *faultRig, peers map[string]string) (*routemesh.Node, error) {
	o := zlink.NewOptions()
	b := o.AddRouteMesh(faultMesh).SetRoutingID("client").ConfigureLiveness(faultLiveness)
	for rid, ep := range peers {
		b.AddPeer(ep, rid)
	}
	b.Channel("echo").Client()
	h, err := r.host(o)
	if err != nil {
		return nil, err
	}
	cli := h.Mesh(faultMesh)
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	return cli, cli.WaitPeers(ctx, len(peers))
}

func freeEndpoint() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "tcp://" + l.Addr().String(), nil
}

func runKill9(ctx context.Context, r *faultRig, _ bool) (out faultOutcome, err error) {
	ep, err := freeEndpoint()
	if err != nil {
		return out, err
	}
	child, err := startFaultChild(r, "ZLINK_FAULTS_RID=k1", "ZLINK_FAULTS_LISTEN="+ep)
	if err != nil {
		return out, err
	}
	o := zlink.NewOptions()
	o.AddRouteMesh(faultMesh).SetRoutingID("k2").ConfigureLiveness(faultLiveness).Channel("echo").Server().HandleRequest("echo", faultEcho)
	h, err := r.host(o)
	if err != nil {
		return out, err
	}
	cli, err := faultClient(r, map[string]string{"k1": child.endpoint, "k2": h.Mesh(faultMesh).Endpoint()})
	if err != nil {
		return out, err
	}
	out.base, out.heap = baseline()
	out.load = startFaultLoad(cli, 4, nil, time.Second)
	if err := waitUntil(ctx, "both Servers serving", 15*time.Second, func() bool { return out.load.Since("k1") > 20 && out.load.Since("k2") > 20 }); err != nil {
		return out, err
	}
	killAt := time.Now()
	child.Kill()
	if err := waitUntil(ctx, "the client losing k1", 15*time.Second, func() bool { return !peerReady(cli, "k1") }); err != nil {
		return out, err
	}
	out.detect = time.Since(killAt)
	out.load.Mark()
	if err := waitUntil(ctx, "k2 carrying the load", 15*time.Second, func() bool { return out.load.Since("k2") > 50 }); err != nil {
		return out, err
	}
	restartAt := time.Now()
	if _, err := startFaultChild(r, "ZLINK_FAULTS_RID=k1", "ZLINK_FAULTS_LISTEN="+ep); err != nil {
		return out, err
	}
	out.load.Mark()
	if err := waitUntil(ctx, "the restarted k1 serving", 10*time.Second, func() bool { return out.load.Since("k1") > 20 }); err != nil {
		return out, err
	}
	out.recover = time.Since(restartAt)
	out.note = "recover counts from the restart (process start included)"
	return out, nil
}
