package benchrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/types/known/wrapperspb"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// `zlink-node bench compare --spots`: virtual actors, two OS processes
// each. ZLink: a caller node (Object Client, the bench process) calls one
// Spot on an Object Server node (the child process) hosting the kind, both
// on one redis-server. Proto.Actor: a cluster client (the bench process)
// calls one grain on a cluster member (the child process), automanaged
// cluster provider, disthash identity lookup. The Spot and the grain are
// activated by the client's first call; every measured request goes to
// the active one. Same payloads and window as the other compare rows.

const (
	cmpSpotMesh   = "cmpspot"
	cmpSpotKind   = "echo"
	cmpSpotID     = "bench-1"  // the one Spot (and grain identity) every request goes to
	cmpGrainName  = "cmpgrain" // the Proto.Actor cluster's name
	cmpSpotPrefix = "cmp-os"
	cmpSpotCaller = "cmp-caller"
)

// cmpSpotImplOrder is the implementations of the Spots comparison; the
// first is the baseline of every ratio.
var cmpSpotImplOrder = []string{"zlink-spot", "protoactor-grain"}

func init() {
	cmpImpls["zlink-spot"] = cmpImpl{
		name:  "zlink-spot",
		label: "ZLink Spot",
		about: "Object Server node hosting kind echo (spot.OnRaw) in its own process; Object Client node spot.CallRaw, one Spot; " +
			"pipelined: one goroutine per request in flight (the Spot API blocks); one redis-server as Location Store",
		serve: cmpServeSpot,
		dial:  cmpDialSpot,
	}
	cmpImpls["protoactor-grain"] = cmpImpl{
		name:  "protoactor-grain",
		label: "Proto.Actor grain",
		about: "protoactor-go cluster member hosting kind echo (Respond) in its own process, automanaged provider, disthash lookup; " +
			"cluster client Request (lockstep) / RequestFuture window (pipelined), one identity; gRPC message limit raised to 64 MiB",
		serve: cmpServeGrain,
		dial:  cmpDialGrain,
	}
}

// cmpSpotKindReg is the kind the Object Server hosts: "echo" answers its
// payload. No idle deactivation while it is measured, and a mailbox that
// holds the whole window (1000 × 16 KiB; the default 4 MiB would answer
// ErrBusy).
func cmpSpotKindReg() *spot.Kind[struct{}] {
	return spot.NewKind(cmpSpotKind, func(string) *struct{} { return &struct{}{} }).
		OnRaw(cmpPacket, func(_ *spot.Context, _ *struct{}, p []byte) ([]byte, error) { return p, nil }).
		SetIdleTimeout(spotsIdle).
		SetMailbox(2*cmpWindow, 2*cmpWindow*(16<<10+1<<10))
}

// cmpSpotNode starts a node of the Spots comparison's mesh on the Redis at
// addr: an Object Server hosting the kind, or an Object Client.
func cmpSpotNode(ctx context.Context, addr, prefix string, server bool) (*zlink.Host, *routemesh.Node, error) {
	if addr == "" {
		return nil, nil, errors.New("benchrun: compare: zlink-spot needs --redis (the Location Store)")
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	store, err := location.NewRedis(sctx, location.RedisConfig{Addr: addr, Prefix: "cmp", PollInterval: 200 * time.Millisecond})
	if err != nil {
		return nil, nil, fmt.Errorf("benchrun: compare: redis %s: %w", addr, err)
	}
	o := zlink.NewOptions().SetLocationStore(store).SetLogger(zerolog.Nop())
	b := o.AddRouteMesh(cmpSpotMesh).SetRoutingIDPrefix(prefix).
		ConfigureRouterSocket(routemesh.SocketConfig{SendHWM: meshSendHWM}).
		ConfigureDiscovery(routemesh.DiscoveryConfig{Poll: 200 * time.Millisecond})
	if server {
		b.SetObjectRole(routemesh.ObjectServer)
		spot.Enable(b, cmpSpotKindReg())
	} else {
		b.SetObjectRole(routemesh.ObjectClient)
		spot.Enable(b)
	}
	h, err := zlink.Start(sctx, o)
	if err != nil {
		_ = store.Close()
		return nil, nil, fmt.Errorf("benchrun: compare: start zlink-spot node: %w", err)
	}
	return h, h.Mesh(cmpSpotMesh), nil
}

func cmpServeSpot(ctx context.Context, f cmpServerFlags) (string, func(), error) {
	h, n, err := cmpSpotNode(ctx, f.redis, cmpSpotPrefix, true)
	if err != nil {
		return "", nil, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(sctx)
	}
	return n.RID(), stop, nil
}

// cmpSpotClient is the caller node.
type cmpSpotClient struct {
	host *zlink.Host
	node *routemesh.Node
	ctx  context.Context
	stop context.CancelFunc
}

// cmpDialSpot starts the caller node, waits until it sees the Object
// Server (endpoint is its RID) and activates the Spot by a first call.
func cmpDialSpot(ctx context.Context, endpoint string, o cmpDialOpts) (cmpClient, error) {
	h, n, err := cmpSpotNode(ctx, o.redis, cmpSpotCaller, false)
	if err != nil {
		return nil, err
	}
	c := &cmpSpotClient{host: h, node: n}
	c.ctx, c.stop = context.WithCancel(context.Background())
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := spot.WaitReady(wctx, n); err != nil {
		c.close()
		return nil, fmt.Errorf("benchrun: compare: zlink-spot caller: %w", err)
	}
	res, err := c.call(wctx, cmpPayload(64))
	if err != nil {
		c.close()
		return nil, fmt.Errorf("benchrun: compare: zlink-spot first call: %w", err)
	}
	if res.Owner != endpoint {
		c.close()
		return nil, fmt.Errorf("benchrun: compare: zlink-spot: %s/%s is owned by %s, not the server process %s", cmpSpotKind, cmpSpotID, res.Owner, endpoint)
	}
	return c, nil
}

func (c *cmpSpotClient) call(ctx context.Context, payload []byte) (spot.Result, error) {
	out, res, err := spot.CallRaw(ctx, c.node, cmpSpotKind, cmpSpotID, cmpPacket, payload)
	if err != nil {
		return res, fmt.Errorf("zlink spot call: %w", err)
	}
	if len(out) != len(payload) {
		return res, errEchoMismatch
	}
	return res, nil
}

func (c *cmpSpotClient) close() {
	c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.host.Stop(ctx)
}

func (c *cmpSpotClient) lockstep(payload []byte, next func() bool) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(c.ctx, cmpCallTimeout+time.Minute)
	defer cancel()
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		t0 := time.Now()
		if _, err := c.call(ctx, payload); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// pipelined keeps window calls in flight, one goroutine each (a Spot call
// from outside a turn blocks its caller).
func (c *cmpSpotClient) pipelined(payload []byte, window int, next func() bool) (int, error) {
	return spotsPipelined(c.ctx, func(ctx context.Context) error {
		_, err := c.call(ctx, payload)
		return err
	}, window, next)
}

// cmpGrainActor is the grain: it answers every payload with itself.
type cmpGrainActor struct{}

func (cmpGrainActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*wrapperspb.BytesValue); ok {
		ctx.Respond(m)
	}
}

// cmpFreePort is a free loopback TCP port (closed again; the caller binds
// it next).
func cmpFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cmpGrainCluster builds a cluster on a new actor system: a member hosting
// the kind (amPort: its automanaged HTTP port), or a client watching the
// members at hosts.
func cmpGrainCluster(o cmpDialOpts, host string, port, amPort int, hosts []string, member bool) *cluster.Cluster {
	sys := cmpProtoSystem(o.log)
	provider := automanaged.NewWithConfig(500*time.Millisecond, amPort, hosts...)
	var opts []cluster.ConfigOption
	opts = append(opts, cluster.WithRequestTimeout(cmpCallTimeout))
	if member {
		opts = append(opts, cluster.WithKinds(cluster.NewKind(cmpSpotKind,
			actor.PropsFromProducer(func() actor.Actor { return cmpGrainActor{} }))))
	}
	cfg := cluster.Configure(cmpGrainName, provider, disthash.New(), cmpProtoRemoteConfig(host, port, o.defaultLimits), opts...)
	return cluster.New(sys, cfg)
}

// cmpServeGrain runs the cluster member; its endpoint is its automanaged
// HTTP address, where the client learns the cluster's members.
func cmpServeGrain(_ context.Context, f cmpServerFlags) (string, func(), error) {
	host, port, err := cmpSplitHostPort(f.listen)
	if err != nil {
		return "", nil, err
	}
	amPort, err := cmpFreePort()
	if err != nil {
		return "", nil, err
	}
	am := net.JoinHostPort(host, strconv.Itoa(amPort))
	// The automanaged provider's HTTP server (labstack/echo) prints a line
	// on os.Stdout when it starts, which in this process is the control
	// pipe: its writes go to stderr (the control answers go to the
	// io.Writer CompareServerMain was given, taken before this).
	os.Stdout = os.Stderr
	c := cmpGrainCluster(cmpDialOpts{defaultLimits: f.defaultLimits}, host, port, amPort, []string{am}, true)
	c.StartMember()
	return am, func() { c.Shutdown(false) }, nil
}

// cmpGrainClient is the cluster client in the bench process.
type cmpGrainClient struct {
	c        *cluster.Cluster
	provider *automanaged.AutoManagedProvider
	closed   chan struct{}
}

// cmpDialGrain starts a cluster client that watches the member at endpoint,
// waits until its member list has a member hosting the kind, and
// activates the grain by a first request (retried: up to 20 s in all).
func cmpDialGrain(ctx context.Context, endpoint string, o cmpDialOpts) (cmpClient, error) {
	c := cmpGrainCluster(o, "127.0.0.1", 0, 0, []string{endpoint}, false)
	g := &cmpGrainClient{c: c, provider: c.Config.ClusterProvider.(*automanaged.AutoManagedProvider), closed: make(chan struct{})}
	c.StartClient()
	deadline := time.Now().Add(20 * time.Second)
	// The member list's lock orders the first request after the topology
	// update: disthash swaps its rendezvous table inside that update
	// without a lock of its own (the race detector sees a request racing
	// the first update otherwise).
	for c.MemberList.GetActivatorMember(cmpSpotKind, "") == "" {
		if time.Now().After(deadline) || ctx.Err() != nil {
			g.close()
			return nil, fmt.Errorf("benchrun: compare: protoactor-grain: no member hosting kind %s seen at %s within 20s%s", cmpSpotKind, endpoint, cmpGrainHealth(g.provider))
		}
		time.Sleep(20 * time.Millisecond)
	}
	payload := cmpPayload(64)
	for {
		err := g.request(payload, 2*time.Second)
		if err == nil {
			return g, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			g.close()
			return nil, fmt.Errorf("benchrun: compare: protoactor-grain first request: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmpGrainHealth is the provider's last error, for an error message.
func cmpGrainHealth(p *automanaged.AutoManagedProvider) string {
	if err := p.GetHealthStatus(); err != nil {
		return " (automanaged provider: " + err.Error() + ")"
	}
	return ""
}

func (g *cmpGrainClient) request(payload []byte, timeout time.Duration) error {
	var opts []cluster.GrainCallOption
	if timeout > 0 {
		opts = append(opts, cluster.WithTimeout(timeout))
	}
	resp, err := g.c.Request(cmpSpotID, cmpSpotKind, &wrapperspb.BytesValue{Value: payload}, opts...)
	if err != nil {
		return fmt.Errorf("protoactor grain request: %w", err)
	}
	return cmpGrainCheck(resp, len(payload))
}

func cmpGrainCheck(resp any, size int) error {
	m, ok := resp.(*wrapperspb.BytesValue)
	if !ok {
		return fmt.Errorf("protoactor grain: reply %T", resp)
	}
	if len(m.Value) != size {
		return errEchoMismatch
	}
	return nil
}

func (g *cmpGrainClient) close() {
	select {
	case <-g.closed:
		return
	default:
	}
	close(g.closed)
	// A client's provider has no HTTP server (Shutdown would close a nil
	// one); deregistering ends its member-list poll.
	// Cluster.Shutdown is for members (a client has no gossip state to
	// set): the actor system and the remote are stopped as it would.
	// The remote stops gracefully: that closes its outbound gRPC
	// connections, whose goroutines would otherwise race the next
	// remote's Start (it sets gRPC's package-level logger).
	_ = g.provider.DeregisterMember()
	g.c.Remote.Shutdown(true)
	g.c.ActorSystem.Shutdown()
}

func (g *cmpGrainClient) lockstep(payload []byte, next func() bool) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		select {
		case <-g.closed:
			return lat, errCmpClosed
		default:
		}
		t0 := time.Now()
		if err := g.request(payload, 0); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// pipelined keeps window RequestFutures outstanding from one goroutine and
// waits for them in the order they were started.
func (g *cmpGrainClient) pipelined(payload []byte, window int, next func() bool) (int, error) {
	msg := &wrapperspb.BytesValue{Value: payload}
	// RequestFuture's default options are a package-level value made once
	// from the first cluster of the process, its root context included:
	// after a redial (or in a test's second run) they would send from a
	// stopped actor system and no reply would come. This cluster's root is
	// named every time.
	opts := []cluster.GrainCallOption{cluster.WithContext(g.c.ActorSystem.Root), cluster.WithTimeout(cmpCallTimeout)}
	start := func() (*actor.Future, error) {
		f, err := g.c.RequestFuture(cmpSpotID, cmpSpotKind, msg, opts...)
		if err != nil {
			return nil, fmt.Errorf("protoactor grain request: %w", err)
		}
		return f, nil
	}
	ring := make([]*actor.Future, 0, window)
	for len(ring) < window && next() {
		f, err := start()
		if err != nil {
			return 0, err
		}
		ring = append(ring, f)
	}
	got := 0
	for head := 0; len(ring) > 0; {
		select {
		case <-g.closed:
			return got, errCmpClosed
		default:
		}
		resp, err := ring[head].Result()
		if err != nil {
			return got, fmt.Errorf("protoactor grain request: %w", err)
		}
		if err := cmpGrainCheck(resp, len(payload)); err != nil {
			return got, err
		}
		got++
		if next() {
			f, err := start()
			if err != nil {
				return got, err
			}
			ring[head] = f
			head = (head + 1) % len(ring)
			continue
		}
		ring = append(ring[:head], ring[head+1:]...)
		if head >= len(ring) {
			head = 0
		}
	}
	return got, nil
}
