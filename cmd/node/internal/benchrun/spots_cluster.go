package benchrun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// The Spots bench's fixed shape.
const (
	spotsMesh        = "spots"
	spotsKind        = "bench"
	spotsPacket      = "echo"
	spotsChanPacket  = "echo"
	spotsPayloadSize = 64
	// spotsIdle keeps every Spot of the bench active: nothing is
	// deactivated while it is measured.
	spotsIdle = time.Hour
)

// spotState is a bench Spot's state: one counter.
type spotState struct{ n int64 }

// spotsBenchKind is the kind the bench's Object Servers host: "echo"
// returns its payload, like the channel handler it is compared with.
func spotsBenchKind() *spot.Kind[spotState] {
	return spot.NewKind(spotsKind, func(string) *spotState { return &spotState{} }).
		OnRaw(spotsPacket, func(_ *spot.Context, s *spotState, p []byte) ([]byte, error) {
			s.n++
			return p, nil
		}).
		SetIdleTimeout(spotsIdle)
}

// spotsChannel is the channel node i serves (the others are its Clients).
func spotsChannel(i int) string { return fmt.Sprintf("echo%d", i) }

// spotsPrefix is node i's routing ID prefix (automatic topology builds
// the RID from it).
func spotsPrefix(i int) string { return fmt.Sprintf("os%d", i) }

// spotsTiming is how fast the cluster's nodes notice each other.
type spotsTiming struct {
	liveness  routemesh.LivenessConfig
	discovery routemesh.DiscoveryConfig
}

var (
	// spotsSteady: default liveness, a short discovery poll so the
	// cluster forms quickly.
	spotsSteady = spotsTiming{discovery: routemesh.DiscoveryConfig{Poll: 200 * time.Millisecond}}
	// spotsFast: a lost node is noticed within a few hundred ms (re-home).
	spotsFast = spotsTiming{
		liveness:  routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 5, LastHeard: 400 * time.Millisecond},
		discovery: routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: 100 * time.Millisecond, InboundGrace: time.Second},
	}
)

// spotsCluster is n Object Servers on one in-memory Location Store. Node i
// hosts the bench kind and serves channel echo<i>; every other node is a
// Client of it.
type spotsCluster struct {
	store location.Store
	hosts []*zlink.Host
	nodes []*routemesh.Node
}

func startSpotsCluster(ctx context.Context, n int, cfg spot.Config, timing spotsTiming) (*spotsCluster, error) {
	c := &spotsCluster{store: location.NewMemory()}
	echo := func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil }
	for i := range n {
		o := zlink.NewOptions().SetLocationStore(c.store)
		b := o.AddRouteMesh(spotsMesh).SetRoutingIDPrefix(spotsPrefix(i)).SetObjectRole(routemesh.ObjectServer).
			ConfigureLiveness(timing.liveness).ConfigureDiscovery(timing.discovery)
		for j := range n {
			if j == i {
				b.Channel(spotsChannel(j)).Server().HandleRequest(spotsChanPacket, echo)
			} else {
				b.Channel(spotsChannel(j)).Client()
			}
		}
		spot.EnableWith(b, cfg, spotsBenchKind())
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, err := zlink.Start(sctx, o)
		cancel()
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("spots: start node %d: %w", i, err)
		}
		c.hosts = append(c.hosts, h)
		c.nodes = append(c.nodes, h.Mesh(spotsMesh))
	}
	if err := c.waitReady(ctx, c.nodes); err != nil {
		c.stop()
		return nil, err
	}
	if err := c.waitPlacement(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// waitPlacement waits until every node places new Spots on every Object
// Server. spot.WaitReady returns once a node knows one Object Server; the
// others join its placement when its next listing of the store sees
// them (one discovery poll later), and until then it places every new
// Spot on the servers it knows. Fresh probe IDs are called from each node
// until their owners cover every server (the probes stay active).
func (c *spotsCluster) waitPlacement(ctx context.Context) error {
	payload := make([]byte, spotsPayloadSize)
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range c.nodes {
		seen := map[string]bool{}
		for k := 0; len(seen) < len(c.nodes); k++ {
			if time.Now().After(deadline) {
				return fmt.Errorf("spots: %s places new Spots only on %d of %d Object Servers", n.RID(), len(seen), len(c.nodes))
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := spotCall(cctx, n, spotID("probe-"+n.RID(), k), payload)
			cancel()
			if err != nil {
				return fmt.Errorf("spots: placement probe from %s: %w", n.RID(), err)
			}
			seen[res.Owner] = true
			if k%16 == 15 {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	return nil
}

// waitReady waits until each of nodes sees every other node of the
// cluster, every channel has a ready Server, and Spot calls can be served.
func (c *spotsCluster) waitReady(ctx context.Context, nodes []*routemesh.Node) error {
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.WaitPeers(wctx, len(nodes)-1); err != nil {
			return fmt.Errorf("spots: %s peers: %w", n.RID(), err)
		}
		for j := range c.nodes {
			if err := n.WaitReady(wctx, spotsChannel(j)); err != nil {
				return fmt.Errorf("spots: %s channel %s: %w", n.RID(), spotsChannel(j), err)
			}
		}
		if err := spot.WaitReady(wctx, n); err != nil {
			return fmt.Errorf("spots: %s: %w", n.RID(), err)
		}
	}
	return nil
}

func (c *spotsCluster) stop() {
	var wg sync.WaitGroup
	for _, h := range c.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = h.Stop(ctx)
		}()
	}
	wg.Wait()
	_ = c.store.Close()
}

// active is the number of active bench Spots on every node.
func (c *spotsCluster) active() int64 {
	var total int64
	for _, n := range c.nodes {
		st, err := spot.StatsOf(n)
		if err != nil {
			continue
		}
		for _, k := range st.Kinds {
			total += k.Active
		}
	}
	return total
}

// spotCall is one raw Spot request that checks the echo; it returns who
// answered.
func spotCall(ctx context.Context, n *routemesh.Node, id string, payload []byte) (spot.Result, error) {
	out, res, err := spot.CallRaw(ctx, n, spotsKind, id, spotsPacket, payload)
	if err != nil {
		return res, err
	}
	if len(out) != len(payload) {
		return res, errEchoMismatch
	}
	return res, nil
}

// chanCall is one channel request that checks the echo.
func chanCall(ctx context.Context, n *routemesh.Node, channel string, payload []byte) error {
	out, err := n.Call(ctx, channel, spotsChanPacket, payload)
	if err != nil {
		return err
	}
	if len(out) != len(payload) {
		return errEchoMismatch
	}
	return nil
}

// spotsParallel runs count calls: perNode goroutines on each node take the
// next index in turn. It returns the elapsed time.
func spotsParallel(ctx context.Context, nodes []*routemesh.Node, perNode, count int,
	call func(ctx context.Context, n *routemesh.Node, i int) error) (time.Duration, error) {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		first atomic.Pointer[error]
	)
	ctx, cancel := context.WithTimeout(ctx, spotsRunLimit)
	defer cancel()
	t0 := time.Now()
	for g := range perNode * len(nodes) {
		n := nodes[g%len(nodes)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count || first.Load() != nil {
					return
				}
				if err := call(ctx, n, i); err != nil {
					err = fmt.Errorf("call %d from %s: %w", i, n.RID(), err)
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	if e := first.Load(); e != nil {
		return el, *e
	}
	return el, nil
}

// spotsActivate activates count Spots named prefix-<i> by first calls from
// perNode goroutines on each of nodes, and returns the elapsed time and
// the owner of each.
func spotsActivate(ctx context.Context, nodes []*routemesh.Node, perNode, count int, prefix string) (time.Duration, []string, error) {
	owners := make([]string, count)
	payload := make([]byte, spotsPayloadSize)
	el, err := spotsParallel(ctx, nodes, perNode, count, func(ctx context.Context, n *routemesh.Node, i int) error {
		res, err := spotCall(ctx, n, spotID(prefix, i), payload)
		owners[i] = res.Owner
		return err
	})
	return el, owners, err
}

func spotID(prefix string, i int) string { return fmt.Sprintf("%s-%07d", prefix, i) }

var errNoSpotOwner = errors.New("spots: no Spot ID owned by the node wanted")

// spotOwnedBy activates Spots from caller until one is owned by rid, and
// returns its ID.
func spotOwnedBy(ctx context.Context, caller *routemesh.Node, rid, prefix string) (string, error) {
	payload := make([]byte, spotsPayloadSize)
	for i := range 256 {
		id := spotID(prefix, i)
		res, err := spotCall(ctx, caller, id, payload)
		if err != nil {
			return "", err
		}
		if res.Owner == rid {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNoSpotOwner, rid)
}
