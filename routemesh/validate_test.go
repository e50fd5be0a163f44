package routemesh

import (
	"errors"
	"testing"
	"time"
)

func TestValidEndpoint(t *testing.T) {
	cases := []struct {
		ep             string
		listen, dialOK bool
	}{
		{"tcp://127.0.0.1:7001", true, true},
		{"tcp://[::1]:7001", true, true},
		{"tcp://node-a.internal:7001", true, true},
		{"tcp://127.0.0.1:0", true, false},
		{"tcp://*:7001", true, false},
		{"tcp://0.0.0.0:0", true, false},
		{"tcp://127.0.0.1:65535", true, true},
		{"tcp://127.0.0.1:65536", false, false},
		{"tcp://127.0.0.1:-1", false, false},
		{"tcp://127.0.0.1", false, false},
		{"tcp://:7001", false, false},
		{"tcp://127.0.0.1:7001/x", false, false},
		{"tcp://127.0.0.1:7001?x=1", false, false},
		{"tcp://u:p@127.0.0.1:7001", false, false},
		{"udp://127.0.0.1:7001", false, false},
		{"127.0.0.1:7001", false, false},
		{"", false, false},
		{"tcp://127.0.0.1:abc", false, false},
	}
	for _, c := range cases {
		if err := validEndpoint(c.ep, true); (err == nil) != c.listen {
			t.Errorf("listen %q: %v, want ok=%v", c.ep, err, c.listen)
		}
		if err := validEndpoint(c.ep, false); (err == nil) != c.dialOK {
			t.Errorf("peer %q: %v, want ok=%v", c.ep, err, c.dialOK)
		}
	}
}

func TestConfigValidate_Rules(t *testing.T) {
	h := func(*Context, []byte) ([]byte, error) { return nil, nil }
	cases := []struct {
		name     string
		build    func() *Config
		store    bool
		sentinel error // nil: accepted
	}{
		{"defaults", func() *Config { return NewMeshBuilder("m").Config() }, false, nil},
		{"nil", func() *Config { return nil }, false, ErrInvalid},
		{"empty mesh", func() *Config { return NewMeshBuilder("").Config() }, false, ErrInvalid},
		{"RID and prefix", func() *Config { return NewMeshBuilder("m").SetRoutingID("a").SetRoutingIDPrefix("p").Config() }, true, ErrRIDConflict},
		{"automatic without store", func() *Config { return NewMeshBuilder("m").SetRoutingIDPrefix("p").Config() }, false, ErrNeedsLocationStore},
		{"automatic with store", func() *Config { return NewMeshBuilder("m").SetRoutingIDPrefix("p").Config() }, true, nil},
		{"automatic with peers", func() *Config {
			return NewMeshBuilder("m").SetRoutingIDPrefix("p").AddPeer("tcp://127.0.0.1:1", "").Config()
		}, true, ErrInvalid},
		{"object role without store", func() *Config { return NewMeshBuilder("m").SetObjectRole(ObjectServer).Config() }, false, ErrNeedsLocationStore},
		{"object role zero", func() *Config { return NewMeshBuilder("m").SetObjectRole(0).Config() }, true, ErrInvalid},
		{"Object Client direct handler", func() *Config {
			return NewMeshBuilder("m").SetObjectRole(ObjectClient).HandleDirectRequest("p", h).Config()
		}, true, ErrDirectOnObjectRole},
		{"RID with slash", func() *Config { return NewMeshBuilder("m").SetRoutingID("a/b").Config() }, false, ErrInvalid},
		{"RID with space", func() *Config { return NewMeshBuilder("m").SetRoutingID("a b").Config() }, false, ErrInvalid},
		{"empty channel", func() *Config { return NewMeshBuilder("m").Channel("").Client().Config() }, false, ErrInvalid},
		{"weight -1", func() *Config { return NewMeshBuilder("m").Channel("c").Server().SetWeight(-1).Mesh().Config() }, false, ErrWeightRange},
		{"weight 10000", func() *Config { return NewMeshBuilder("m").Channel("c").Server().SetWeight(10000).Mesh().Config() }, false, nil},
		{"descriptor TTL too short", func() *Config {
			return NewMeshBuilder("m").ConfigureDiscovery(DiscoveryConfig{DescriptorTTL: time.Millisecond}).Config()
		}, false, ErrInvalid},
		{"hand-filled zero sizes", func() *Config { return &Config{Mesh: "m", Listen: "tcp://127.0.0.1:0", ObjectRole: ObjectNone} }, false, ErrInvalid},
		{"builder refusal", func() *Config { return NewMeshBuilder("m").SetTimeouts(-1, 0).Config() }, false, ErrInvalid},
		{"last heard not above interval", func() *Config {
			return NewMeshBuilder("m").ConfigureLiveness(LivenessConfig{Interval: 5 * time.Second}).Config()
		}, false, ErrInvalid},
		{"advertise IP", func() *Config { return NewMeshBuilder("m").SetAdvertiseHost("10.0.0.5").Config() }, false, nil},
		{"advertise IPv6", func() *Config { return NewMeshBuilder("m").SetAdvertiseHost("[fd00::5]").Config() }, false, nil},
		{"advertise name", func() *Config { return NewMeshBuilder("m").SetAdvertiseHost("node-a.game.internal").Config() }, false, nil},
		{"advertise with port", func() *Config { return NewMeshBuilder("m").SetAdvertiseHost("10.0.0.5:7001").Config() }, false, ErrInvalid},
		{"advertise with scheme", func() *Config { return NewMeshBuilder("m").SetAdvertiseHost("tcp://10.0.0.5").Config() }, false, ErrInvalid},
		{"advertise unspecified", func() *Config { return NewMeshBuilder("m").SetAdvertiseHost("0.0.0.0").Config() }, false, ErrInvalid},
	}
	for _, c := range cases {
		err := c.build().validate(c.store)
		if c.sentinel == nil {
			if err != nil {
				t.Errorf("%s: %v, want accepted", c.name, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.Is(err, c.sentinel) || !errors.Is(err, ErrConfig) || !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError matching %v", c.name, err, c.sentinel)
		}
	}
}

// The first refusal wins and names the builder's mesh (and channel).
func TestMeshBuilder_FirstRefusalKept(t *testing.T) {
	b := NewMeshBuilder("m")
	b.Channel("c").Server().SetConcurrency(-1)
	b.SetHandlerConcurrency(0)
	var ce *ConfigError
	if err := b.Config().validate(false); !errors.As(err, &ce) || ce.Mesh != "m" || ce.Channel != "c" {
		t.Fatalf("refusal %v, want the first one (mesh m, channel c)", err)
	}
	// A refused setting leaves the recorded value alone.
	if got := b.Config().HandlerConcurrency; got != 64 {
		t.Fatalf("HandlerConcurrency after a refused change = %d, want 64", got)
	}
}

// Config returns a deep copy: channel registrations, handler maps, peers
// and the secret of the copy are its own.
func TestMeshBuilder_ConfigIsADeepCopy(t *testing.T) {
	h := func(*Context, []byte) ([]byte, error) { return nil, nil }
	b := NewMeshBuilder("m").AddPeer("tcp://127.0.0.1:1", "p").SetTrust(TrustConfig{Secret: []byte("s")}).
		HandleDirectRequest("d", h)
	b.Channel("c").Server().SetWeight(5).HandleRequest("r", h)
	c := b.Config()
	c.channels[0].weight = 9
	c.channels[0].requests["x"] = h
	c.channels = append(c.channels, &channelReg{name: "y", role: RoleClient})
	c.directRequests["z"] = h
	c.Peers[0].ExpectRID = "q"
	c.Trust.Secret[0] = 'X'
	d := b.Config()
	if len(d.channels) != 1 || d.channels[0].weight != 5 || len(d.channels[0].requests) != 1 ||
		len(d.directRequests) != 1 || d.Peers[0].ExpectRID != "p" || string(d.Trust.Secret) != "s" {
		t.Fatalf("changing a copy changed the builder: channels %+v direct %d peers %+v secret %q",
			d.channels[0], len(d.directRequests), d.Peers, d.Trust.Secret)
	}
}

// The send timeout in force stays below what a peer may stay silent: one
// write to a peer that stopped reading holds the heartbeats to the others.
func TestConfig_SendTimeoutDerivedFromLiveness(t *testing.T) {
	cases := []struct {
		live     LivenessConfig
		explicit time.Duration
		want     time.Duration
	}{
		{DefaultLivenessConfig(), 0, 500 * time.Millisecond}, // silence 2.5 s (5 × 500 ms), less 500 ms, a quarter
		{LivenessConfig{Interval: 100 * time.Millisecond, MaxGap: 5, LastHeard: time.Second}, 0, 250 * time.Millisecond},
		{LivenessConfig{Interval: time.Second, MaxGap: 10, LastHeard: 9 * time.Second}, 0, 2 * time.Second},
		{DefaultLivenessConfig(), 1500 * time.Millisecond, 1500 * time.Millisecond},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.Liveness, cfg.Socket.SendTimeout = c.live, c.explicit
		if got := cfg.sendTimeout(); got != c.want {
			t.Errorf("liveness %+v, send timeout %v: in force %v, want %v", c.live, c.explicit, got, c.want)
		}
		if got := cfg.sendTimeout(); got >= c.live.sendTimeoutMargin() && c.explicit == 0 && got != minSendTimeout {
			t.Errorf("liveness %+v: derived %v is not below the margin %v", c.live, got, c.live.sendTimeoutMargin())
		}
	}
}
