package benchrun

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// The compare bench's ZLink shape: a server node with a Server role on
// channel "echo" (and a Node-direct "echo" for the multicast part), a
// client node that dialed it.
const (
	cmpMesh      = "cmp"
	cmpChannel   = "echo"
	cmpPacket    = "echo"
	cmpServerRID = "cmp-server"
	cmpClientRID = "cmp-client"
	// cmpCallTimeout bounds every request of the bench; a stalled run is
	// caught earlier by the runner's watchdog.
	cmpCallTimeout = 30 * time.Second
)

func init() {
	cmpImpls["zlink"] = cmpImpl{
		name:  "zlink",
		label: "ZLink",
		about: "zlink.Start server node, Server role on channel echo; client node Call (lockstep) / CallFuture window (pipelined)",
		serve: cmpServeZlink,
		dial: func(ctx context.Context, endpoint string, _ cmpDialOpts) (cmpClient, error) {
			return cmpDialZlink(ctx, cmpClientRID, map[string]string{cmpServerRID: endpoint}, nil)
		},
	}
	cmpImpls["zlink-gpc"] = cmpImpl{
		name:  "zlink-gpc",
		label: "ZLink, goroutine per call",
		about: "the zlink server; client node Call (lockstep) / window goroutines each calling Node.Call in a loop (pipelined): a gateway with a goroutine per player",
		serve: cmpServeZlink,
		dial: func(ctx context.Context, endpoint string, _ cmpDialOpts) (cmpClient, error) {
			c, err := cmpDialZlink(ctx, cmpClientRID, map[string]string{cmpServerRID: endpoint}, nil)
			if err != nil {
				return nil, err
			}
			return cmpZlinkPerCall{c}, nil
		},
	}
}

// cmpZlinkPerCall is the zlink client whose pipelined run keeps window
// goroutines each calling Node.Call in a loop (the blocking call, the Go
// way), instead of one goroutine keeping window CallFutures.
type cmpZlinkPerCall struct{ *cmpZlinkClient }

func (c cmpZlinkPerCall) pipelined(payload []byte, window int, next func() bool) (int, error) {
	ctx, cancel := context.WithTimeout(c.ctx, cmpCallTimeout+time.Minute)
	defer cancel()
	var (
		got  atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	for range window {
		wg.Go(func() {
			for next() {
				out, err := c.node.Call(ctx, cmpChannel, cmpPacket, payload)
				if err == nil && len(out) != len(payload) {
					err = errEchoMismatch
				}
				if err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = fmt.Errorf("zlink call: %w", err)
					}
					mu.Unlock()
					cancel()
					return
				}
				got.Add(1)
			}
		})
	}
	wg.Wait()
	return int(got.Load()), ferr
}

func cmpEcho(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil }

// cmpServeZlink serves the zlink implementations: plaintext, or TLS with
// the files of f.tlsDir (zlink-tls).
func cmpServeZlink(ctx context.Context, f cmpServerFlags) (string, func(), error) {
	o := zlink.NewOptions()
	m := o.AddRouteMesh(cmpMesh).SetRoutingID(f.rid).Listen("tcp://"+f.listen).
		ConfigureRouterSocket(routemesh.SocketConfig{SendHWM: meshSendHWM}).
		HandleDirectRequest(cmpPacket, cmpEcho)
	if t := cmpTLSConfig(f.tlsDir); t != nil {
		m.SetTLS(*t)
	}
	m.Channel(cmpChannel).Server().HandleRequest(cmpPacket, cmpEcho)
	h, err := zlink.Start(ctx, o)
	if err != nil {
		return "", nil, fmt.Errorf("benchrun: compare: start zlink server: %w", err)
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(sctx)
	}
	return h.Mesh(cmpMesh).Endpoint(), stop, nil
}

// cmpZlinkClient is a client node with manual peers.
type cmpZlinkClient struct {
	host *zlink.Host
	node *routemesh.Node
	ctx  context.Context
	stop context.CancelFunc
}

// cmpDialZlink starts a client node that dials every server (rid → endpoint)
// and waits until it sees them all Ready; with tls, over TLS.
func cmpDialZlink(ctx context.Context, rid string, servers map[string]string, tls *routemesh.TLSConfig) (*cmpZlinkClient, error) {
	o := zlink.NewOptions()
	m := o.AddRouteMesh(cmpMesh).SetRoutingID(rid).
		ConfigureRouterSocket(routemesh.SocketConfig{SendHWM: meshSendHWM})
	if tls != nil {
		m.SetTLS(*tls)
	}
	for srid, ep := range servers {
		m.AddPeer(ep, srid)
	}
	m.Channel(cmpChannel).Client()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("benchrun: compare: start zlink client: %w", err)
	}
	c := &cmpZlinkClient{host: h, node: h.Mesh(cmpMesh)}
	c.ctx, c.stop = context.WithCancel(context.Background())
	for srid := range servers {
		if err := waitPeerReady(ctx, c.node, srid, 20*time.Second); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (c *cmpZlinkClient) close() {
	c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.host.Stop(ctx)
}

func (c *cmpZlinkClient) lockstep(payload []byte, next func() bool) ([]time.Duration, error) {
	// One deadline for the whole run: no timer per call (as an
	// application with a request-scoped context would do).
	ctx, cancel := context.WithTimeout(c.ctx, cmpCallTimeout+time.Minute)
	defer cancel()
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		t0 := time.Now()
		out, err := c.node.Call(ctx, cmpChannel, cmpPacket, payload)
		if err != nil {
			return lat, fmt.Errorf("zlink call: %w", err)
		}
		if len(out) != len(payload) {
			return lat, errEchoMismatch
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// pipelined keeps window CallFutures outstanding from one goroutine and
// waits for them in the order they were started.
func (c *cmpZlinkClient) pipelined(payload []byte, window int, next func() bool) (int, error) {
	ring := make([]*routemesh.Future, window)
	head, inflight, got := 0, 0, 0
	for inflight < window && next() {
		ring[inflight] = c.node.CallFuture(cmpChannel, cmpPacket, payload, cmpCallTimeout)
		inflight++
	}
	for inflight > 0 {
		f := ring[head]
		out, err := f.Wait(c.ctx)
		if err != nil {
			return got, fmt.Errorf("zlink call: %w", err)
		}
		if len(out) != len(payload) {
			return got, errEchoMismatch
		}
		got++
		if next() {
			ring[head] = c.node.CallFuture(cmpChannel, cmpPacket, payload, cmpCallTimeout)
		} else {
			ring[head] = nil
			inflight--
			if inflight == 0 {
				break
			}
		}
		head = (head + 1) % window
		for ring[head] == nil {
			head = (head + 1) % window
		}
	}
	return got, nil
}

// cmpZlinkServerRIDs names n server nodes.
func cmpZlinkServerRIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", cmpServerRID, i)
	}
	return out
}
