package test

// Startup validation of one MeshNode's configuration, driven through the
// public builder, zlink.Start and routemesh.Start: every rule refuses with a
// *routemesh.ConfigError naming the mesh (and channel), before any socket is
// bound.

import (
	"context"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/routemesh"
)

func TestConfig_StartupRulesRefuse(t *testing.T) {
	store := memStore(t)
	cases := []struct {
		name     string
		build    func(o *zlink.Options)
		sentinel error
		mesh     string
		channel  string
	}{
		{"manual peers on an automatic node", func(o *zlink.Options) {
			o.SetLocationStore(store)
			o.AddRouteMesh("game").SetRoutingIDPrefix("g").AddPeer("tcp://127.0.0.1:7001", "")
		}, routemesh.ErrInvalid, "game", ""},
		{"empty MeshName", func(o *zlink.Options) { o.AddRouteMesh("") }, routemesh.ErrInvalid, "", ""},
		{"empty ChannelName (Client)", func(o *zlink.Options) { o.AddRouteMesh("game").Channel("").Client() }, routemesh.ErrInvalid, "game", ""},
		{"empty ChannelName (Server)", func(o *zlink.Options) { o.AddRouteMesh("game").Channel("").Server() }, routemesh.ErrInvalid, "game", ""},
		{"listen without scheme", func(o *zlink.Options) { o.AddRouteMesh("game").Listen("127.0.0.1:7001") }, routemesh.ErrInvalid, "game", ""},
		{"listen with another scheme", func(o *zlink.Options) { o.AddRouteMesh("game").Listen("udp://127.0.0.1:7001") }, routemesh.ErrInvalid, "game", ""},
		{"listen without port", func(o *zlink.Options) { o.AddRouteMesh("game").Listen("tcp://127.0.0.1") }, routemesh.ErrInvalid, "game", ""},
		{"listen port out of range", func(o *zlink.Options) { o.AddRouteMesh("game").Listen("tcp://127.0.0.1:70000") }, routemesh.ErrInvalid, "game", ""},
		{"listen with a path", func(o *zlink.Options) { o.AddRouteMesh("game").Listen("tcp://127.0.0.1:7001/x") }, routemesh.ErrInvalid, "game", ""},
		{"listen empty", func(o *zlink.Options) { o.AddRouteMesh("game").Listen("") }, routemesh.ErrInvalid, "game", ""},
		{"peer without scheme", func(o *zlink.Options) { o.AddRouteMesh("game").AddPeer("127.0.0.1:7001", "b") }, routemesh.ErrInvalid, "game", ""},
		{"peer on port 0", func(o *zlink.Options) { o.AddRouteMesh("game").AddPeer("tcp://127.0.0.1:0", "b") }, routemesh.ErrInvalid, "game", ""},
		{"peer on the wildcard host", func(o *zlink.Options) { o.AddRouteMesh("game").AddPeer("tcp://*:7001", "b") }, routemesh.ErrInvalid, "game", ""},
		{"peer without host", func(o *zlink.Options) { o.AddRouteMesh("game").AddPeer("tcp://:7001", "b") }, routemesh.ErrInvalid, "game", ""},
		{"advertise host with a port", func(o *zlink.Options) { o.AddRouteMesh("game").SetAdvertiseHost("10.0.0.5:7001") }, routemesh.ErrInvalid, "game", ""},
		{"advertise host unspecified", func(o *zlink.Options) { o.AddRouteMesh("game").SetAdvertiseHost("0.0.0.0") }, routemesh.ErrInvalid, "game", ""},
		{"liveness last heard within one interval", func(o *zlink.Options) {
			o.AddRouteMesh("game").ConfigureLiveness(routemesh.LivenessConfig{Interval: time.Second, LastHeard: time.Second})
		}, routemesh.ErrInvalid, "game", ""},
		{"RID with '/'", func(o *zlink.Options) { o.AddRouteMesh("game").SetRoutingID("a/b") }, routemesh.ErrInvalid, "game", ""},
		{"RID prefix with '/'", func(o *zlink.Options) {
			o.SetLocationStore(store)
			o.AddRouteMesh("game").SetRoutingIDPrefix("g/x")
		}, routemesh.ErrInvalid, "game", ""},
		{"expected peer RID with '/'", func(o *zlink.Options) { o.AddRouteMesh("game").AddPeer("tcp://127.0.0.1:7001", "b/1") }, routemesh.ErrInvalid, "game", ""},
		{"automatic fanout without a store", func(o *zlink.Options) {
			o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Automatic: true})
		}, routemesh.ErrNeedsLocationStore, "", "news"},
		{"Object Server without a store", func(o *zlink.Options) {
			o.AddRouteMesh("game").SetObjectRole(routemesh.ObjectServer)
		}, routemesh.ErrNeedsLocationStore, "game", ""},
		{"Object Client without a store", func(o *zlink.Options) {
			o.AddRouteMesh("game").SetObjectRole(routemesh.ObjectClient).Channel("lobby").Client()
		}, routemesh.ErrNeedsLocationStore, "game", ""},
		{"invalid object role", func(o *zlink.Options) {
			o.SetLocationStore(store)
			o.AddRouteMesh("game").SetObjectRole(routemesh.ObjectRole(0))
		}, routemesh.ErrInvalid, "game", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := zlink.NewOptions()
			c.build(o)
			wantConfigError(t, startErr(t, o), c.sentinel, c.mesh, c.channel)
		})
	}
}

// The same registrations minus the bad setting start: the refusals above
// are about that setting and nothing else.
func TestConfig_StartupRulesAcceptTheGoodForm(t *testing.T) {
	store := memStore(t)
	for name, build := range map[string]func(o *zlink.Options){
		"automatic node without peers": func(o *zlink.Options) {
			o.SetLocationStore(store)
			o.AddRouteMesh("game").SetRoutingIDPrefix("g").ConfigureDiscovery(fastDiscovery)
		},
		"manual node with a peer": func(o *zlink.Options) {
			o.AddRouteMesh("game").SetRoutingID("a-1").AddPeer("tcp://127.0.0.1:1", "b-1").Channel("match").Client()
		},
		"listen on the wildcard host": func(o *zlink.Options) { o.AddRouteMesh("game").Listen("tcp://*:0") },
		"advertise host name":         func(o *zlink.Options) { o.AddRouteMesh("game").SetAdvertiseHost("localhost") },
		"automatic fanout with a store": func(o *zlink.Options) {
			o.SetLocationStore(store)
			o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Automatic: true})
		},
		"Object Server with a store": func(o *zlink.Options) {
			o.SetLocationStore(store)
			o.AddRouteMesh("game").SetObjectRole(routemesh.ObjectServer)
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := zlink.NewOptions()
			build(o)
			if err := startErr(t, o); err != nil {
				t.Fatalf("Start: %v", err)
			}
		})
	}
}

// Every builder setter that cannot take a value refuses it: Start (and the
// validation of the builder's Config) returns the refusal instead of
// running with a silently substituted default.
func TestConfig_BuilderSettersRefuseBadValues(t *testing.T) {
	h := func(*routemesh.Context, []byte) ([]byte, error) { return nil, nil }
	s := func(*routemesh.Context, []byte) {}
	cases := map[string]struct {
		build   func(b *routemesh.MeshBuilder)
		channel string
	}{
		"negative SendHWM":        {build: func(b *routemesh.MeshBuilder) { b.ConfigureRouterSocket(routemesh.SocketConfig{SendHWM: -1}) }},
		"negative mailbox budget": {build: func(b *routemesh.MeshBuilder) { b.ConfigureRouterSocket(routemesh.SocketConfig{MailboxByteBudget: -1}) }},
		"negative send timeout": {build: func(b *routemesh.MeshBuilder) {
			b.ConfigureRouterSocket(routemesh.SocketConfig{SendTimeout: -time.Second})
		}},
		"send timeout at the liveness margin": {build: func(b *routemesh.MeshBuilder) {
			// Default liveness: a peer is lost after 2.5 s of silence; a
			// 2 s send timeout (2.5 s less one 500 ms interval) is refused.
			b.ConfigureRouterSocket(routemesh.SocketConfig{SendTimeout: 2 * time.Second})
		}},
		"negative liveness interval": {build: func(b *routemesh.MeshBuilder) {
			b.ConfigureLiveness(routemesh.LivenessConfig{Interval: -time.Millisecond})
		}},
		"negative max gap":    {build: func(b *routemesh.MeshBuilder) { b.ConfigureLiveness(routemesh.LivenessConfig{MaxGap: -1}) }},
		"negative last heard": {build: func(b *routemesh.MeshBuilder) { b.ConfigureLiveness(routemesh.LivenessConfig{LastHeard: -time.Second}) }},
		"negative descriptor TTL": {build: func(b *routemesh.MeshBuilder) {
			b.ConfigureDiscovery(routemesh.DiscoveryConfig{DescriptorTTL: -time.Second})
		}},
		"negative discovery poll":            {build: func(b *routemesh.MeshBuilder) { b.ConfigureDiscovery(routemesh.DiscoveryConfig{Poll: -time.Second}) }},
		"handler concurrency 0":              {build: func(b *routemesh.MeshBuilder) { b.SetHandlerConcurrency(0) }},
		"negative handler concurrency":       {build: func(b *routemesh.MeshBuilder) { b.SetHandlerConcurrency(-3) }},
		"negative hung threshold":            {build: func(b *routemesh.MeshBuilder) { b.SetHungDetection(-1, 0) }},
		"negative hung interval":             {build: func(b *routemesh.MeshBuilder) { b.SetHungDetection(1, -time.Second) }},
		"negative drain timeout":             {build: func(b *routemesh.MeshBuilder) { b.SetTimeouts(-time.Second, 0) }},
		"negative shutdown timeout":          {build: func(b *routemesh.MeshBuilder) { b.SetTimeouts(0, -time.Second) }},
		"configuration generation 0":         {build: func(b *routemesh.MeshBuilder) { b.SetConfigGeneration(0) }},
		"direct request without packet name": {build: func(b *routemesh.MeshBuilder) { b.HandleDirectRequest("", h) }},
		"direct request nil handler":         {build: func(b *routemesh.MeshBuilder) { b.HandleDirectRequest("p", nil) }},
		"direct request twice":               {build: func(b *routemesh.MeshBuilder) { b.HandleDirectRequest("p", h).HandleDirectRequest("p", h) }},
		"direct send nil handler":            {build: func(b *routemesh.MeshBuilder) { b.HandleDirectSend("p", nil) }},
		"direct send twice":                  {build: func(b *routemesh.MeshBuilder) { b.HandleDirectSend("p", s).HandleDirectSend("p", s) }},
		"channel request twice": {channel: "match", build: func(b *routemesh.MeshBuilder) {
			b.Channel("match").Server().HandleRequest("p", h).HandleRequest("p", h)
		}},
		"channel request nil handler":      {channel: "match", build: func(b *routemesh.MeshBuilder) { b.Channel("match").Server().HandleRequest("p", nil) }},
		"channel send without packet name": {channel: "match", build: func(b *routemesh.MeshBuilder) { b.Channel("match").Server().HandleSend("", s) }},
		"negative channel concurrency":     {channel: "match", build: func(b *routemesh.MeshBuilder) { b.Channel("match").Server().SetConcurrency(-1) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := zlink.NewOptions()
			c.build(o.AddRouteMesh("game"))
			wantConfigError(t, startErr(t, o), routemesh.ErrInvalid, "game", c.channel)

			b := routemesh.NewMeshBuilder("game")
			c.build(b)
			err := (&routemesh.Topology{Meshes: []*routemesh.Config{b.Config()}}).Validate()
			wantConfigError(t, err, routemesh.ErrInvalid, "game", c.channel)
		})
	}
	// The same packet name as a request and as a send is two handlers
	// (handlers are keyed by kind), not a duplicate.
	o := zlink.NewOptions()
	o.AddRouteMesh("game").HandleDirectRequest("p", h).HandleDirectSend("p", s).
		Channel("match").Server().HandleRequest("p", h).HandleSend("p", s)
	if err := startErr(t, o); err != nil {
		t.Fatalf("a request and a send handler of one packet name: %v", err)
	}
	// Zero keeps the documented default; it is not a refusal.
	o = zlink.NewOptions()
	o.AddRouteMesh("game").ConfigureRouterSocket(routemesh.SocketConfig{}).ConfigureLiveness(routemesh.LivenessConfig{}).
		ConfigureDiscovery(routemesh.DiscoveryConfig{}).SetTimeouts(0, 0).SetHungDetection(0, 0).
		Channel("match").Server().SetConcurrency(0)
	if err := startErr(t, o); err != nil {
		t.Fatalf("zero settings: %v", err)
	}
}

// routemesh.Start refuses a bad Config itself, with the same *ConfigError
// zlink.Start gives, even when nothing validated it before.
func TestConfig_RoutemeshStartValidatesItsOwnConfig(t *testing.T) {
	sys := actors.NewSystem(actors.Config{Name: "direct-start"})
	t.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	start := func(cfg *routemesh.Config) error {
		t.Helper()
		n, err := routemesh.Start(ctxT(t, 10*time.Second), cfg, routemesh.Deps{System: sys})
		if err == nil {
			_ = n.Stop(ctxT(t, 10*time.Second))
		}
		return err
	}
	bad := map[string]struct {
		cfg      func() *routemesh.Config
		sentinel error
		mesh     string
		channel  string
	}{
		"RID with '/'": {cfg: func() *routemesh.Config { return routemesh.NewMeshBuilder("game").SetRoutingID("a/b").Config() },
			sentinel: routemesh.ErrInvalid, mesh: "game"},
		"automatic without a store": {cfg: func() *routemesh.Config { return routemesh.NewMeshBuilder("game").SetRoutingIDPrefix("g").Config() },
			sentinel: routemesh.ErrNeedsLocationStore, mesh: "game"},
		"fixed RID and prefix": {cfg: func() *routemesh.Config {
			return routemesh.NewMeshBuilder("game").SetRoutingID("a").SetRoutingIDPrefix("g").Config()
		}, sentinel: routemesh.ErrRIDConflict, mesh: "game"},
		"weight out of range": {cfg: func() *routemesh.Config {
			return routemesh.NewMeshBuilder("game").Channel("match").Server().SetWeight(10001).Mesh().Config()
		}, sentinel: routemesh.ErrWeightRange, mesh: "game", channel: "match"},
		"Object Client with a direct handler": {cfg: func() *routemesh.Config {
			return routemesh.NewMeshBuilder("game").SetObjectRole(routemesh.ObjectClient).HandleDirectRequest("echo", echo).Config()
		}, sentinel: routemesh.ErrNeedsLocationStore, mesh: "game"},
		"a refused setter": {cfg: func() *routemesh.Config { return routemesh.NewMeshBuilder("game").SetHandlerConcurrency(0).Config() },
			sentinel: routemesh.ErrInvalid, mesh: "game"},
		"DefaultConfig without a MeshName": {cfg: func() *routemesh.Config { c := routemesh.DefaultConfig(); return &c },
			sentinel: routemesh.ErrInvalid},
		"a hand-filled Config with zero sizes": {cfg: func() *routemesh.Config {
			return &routemesh.Config{Mesh: "game", Listen: "tcp://127.0.0.1:0", ObjectRole: routemesh.ObjectNone}
		}, sentinel: routemesh.ErrInvalid, mesh: "game"},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			err := start(c.cfg())
			wantConfigError(t, err, c.sentinel, c.mesh, c.channel)
		})
	}
	t.Run("DefaultConfig with a MeshName starts", func(t *testing.T) {
		c := routemesh.DefaultConfig()
		c.Mesh = "game"
		if err := start(&c); err != nil {
			t.Fatalf("DefaultConfig + MeshName: %v", err)
		}
	})
}

// MeshBuilder.Config hands out a copy: changing it changes neither the
// builder nor the node Start builds from the builder.
func TestConfig_BuilderConfigIsACopy(t *testing.T) {
	o := zlink.NewOptions()
	b := o.AddRouteMesh("game").SetRoutingID("orig").AddPeer("tcp://127.0.0.1:1", "p").
		SetTrust(routemesh.TrustConfig{Secret: []byte("secret")})
	b.Channel("match").Server().SetWeight(7)
	c := b.Config()
	c.RID = "changed"
	c.Listen = "tcp://127.0.0.1:1"
	c.Peers[0].Endpoint = "tcp://127.0.0.1:2"
	c.Peers = append(c.Peers, routemesh.PeerConfig{Endpoint: "tcp://127.0.0.1:3"})
	c.Trust.Secret[0] = 'X'
	c.Liveness.Interval = time.Hour
	c.HandlerConcurrency = 0

	again := b.Config()
	if again.RID != "orig" || again.Listen != "tcp://127.0.0.1:0" || len(again.Peers) != 1 ||
		again.Peers[0].Endpoint != "tcp://127.0.0.1:1" || string(again.Trust.Secret) != "secret" ||
		again.Liveness != routemesh.DefaultLivenessConfig() || again.HandlerConcurrency != 64 {
		t.Fatalf("changing the copy changed the builder: %+v", again)
	}
	n := startHost(t, o).Mesh("game")
	st := status(t, n)
	if n.RID() != "orig" || len(st.Channels) != 1 || st.Channels[0].Weight != 7 {
		t.Fatalf("node built from the builder: rid %q channels %+v", n.RID(), st.Channels)
	}
}

// DefaultConfig gives the documented defaults, and the builder starts from
// them.
func TestConfig_DefaultConfigDocumentedDefaults(t *testing.T) {
	d := routemesh.DefaultConfig()
	want := routemesh.DefaultSocketConfig()
	if d.Socket != want || want.SendHWM != 1000 || want.ReceiveHWM != 1000 || want.MailboxMessageBudget != 10000 ||
		want.MailboxByteBudget != 64<<20 || want.SendTimeout != 0 || want.ReceiveTimeout != 5*time.Second {
		t.Fatalf("socket defaults %+v", d.Socket)
	}
	if d.Listen != "tcp://127.0.0.1:0" || d.ObjectRole != routemesh.ObjectNone || d.PlacementWeight != 100 ||
		d.ConfigGeneration != 1 || d.Trust.Profile != "shared" || d.DrainTimeout != 10*time.Second ||
		d.ShutdownTimeout != 5*time.Second || d.DescriptorTTL != 5*time.Second || d.DiscoveryPoll != time.Second ||
		d.InboundGrace != 3*time.Second || d.HandlerConcurrency != 64 || d.HungThreshold != 64 ||
		d.HungCheckInterval != time.Second || d.SelectionSeed != 0 || d.Mesh != "" || d.RID != "" || d.RIDPrefix != "" {
		t.Fatalf("defaults %+v", d)
	}
	b := routemesh.NewMeshBuilder("game").Config()
	d.Mesh = "game"
	if b.Socket != d.Socket || b.Liveness != d.Liveness || b.DrainTimeout != d.DrainTimeout ||
		b.HandlerConcurrency != d.HandlerConcurrency || b.Listen != d.Listen || b.Mesh != "game" {
		t.Fatalf("builder does not start from DefaultConfig: %+v", b)
	}
	if routemesh.DefaultWeight != 100 || routemesh.MinWeight != 0 || routemesh.MaxWeight != 10000 {
		t.Fatalf("weight limits %d..%d default %d", routemesh.MinWeight, routemesh.MaxWeight, routemesh.DefaultWeight)
	}
}
