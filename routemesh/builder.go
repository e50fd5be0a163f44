package routemesh

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// MeshBuilder registers one MeshNode. Its methods record settings; a value
// a method cannot take (a negative duration, a nil handler, a packet
// registered twice) is not ignored: the first such refusal is kept and
// Start returns it as a *ConfigError. All other checks happen at Start.
type MeshBuilder struct{ cfg *Config }

// NewMeshBuilder starts the configuration of the MeshNode of mesh name.
func NewMeshBuilder(name string) *MeshBuilder {
	cfg := DefaultConfig()
	cfg.Mesh = name
	return &MeshBuilder{cfg: &cfg}
}

// Config returns a copy of the recorded configuration, including any
// refusal a builder method recorded (Start returns it). Changing the copy
// does not change the builder.
func (b *MeshBuilder) Config() *Config { return b.cfg.clone() }

// refuse records the first refused setting.
func (b *MeshBuilder) refuse(channel, detail string) {
	if b.cfg.buildErr == nil {
		b.cfg.buildErr = &ConfigError{Mesh: b.cfg.Mesh, Channel: channel, Err: ErrInvalid, Detail: detail}
	}
}

// Listen sets the ROUTER bind endpoint (tcp://HOST:PORT; port 0 picks one).
func (b *MeshBuilder) Listen(endpoint string) *MeshBuilder { b.cfg.Listen = endpoint; return b }

// SetAdvertiseHost sets the host peers should dial when it differs from the
// bind address.
func (b *MeshBuilder) SetAdvertiseHost(host string) *MeshBuilder {
	b.cfg.AdvertiseHost = host
	return b
}

// SetRoutingIDPrefix selects automatic topology: the framework builds a unique
// RID from the prefix and finds peers through the Location Store.
func (b *MeshBuilder) SetRoutingIDPrefix(prefix string) *MeshBuilder {
	b.cfg.RIDPrefix = prefix
	return b
}

// SetRoutingID fixes the RID (manual topology only).
func (b *MeshBuilder) SetRoutingID(rid string) *MeshBuilder { b.cfg.RID = rid; return b }

// ConfigureRouterSocket sets HWMs, timeouts and mailbox budgets; zero fields
// keep their defaults, negative ones are refused.
func (b *MeshBuilder) ConfigureRouterSocket(s SocketConfig) *MeshBuilder {
	if s.SendHWM < 0 || s.ReceiveHWM < 0 || s.MailboxMessageBudget < 0 || s.MailboxByteBudget < 0 ||
		s.SendTimeout < 0 || s.ReceiveTimeout < 0 {
		b.refuse("", fmt.Sprintf("ConfigureRouterSocket: negative setting in %+v", s))
		return b
	}
	b.cfg.Socket = s.withDefaults()
	return b
}

// ConfigureLiveness sets the heartbeat machine; zero fields keep defaults,
// negative ones are refused.
func (b *MeshBuilder) ConfigureLiveness(l LivenessConfig) *MeshBuilder {
	if l.Interval < 0 || l.MaxGap < 0 || l.LastHeard < 0 {
		b.refuse("", fmt.Sprintf("ConfigureLiveness: negative setting in %+v", l))
		return b
	}
	d := DefaultLivenessConfig()
	if l.Interval == 0 {
		l.Interval = d.Interval
	}
	if l.MaxGap == 0 {
		l.MaxGap = d.MaxGap
	}
	if l.LastHeard == 0 {
		l.LastHeard = d.LastHeard
	}
	b.cfg.Liveness = l
	return b
}

// DiscoveryConfig sets the descriptor lease and discovery timing of a
// MeshNode with a Location Store. Zero fields keep their defaults.
type DiscoveryConfig struct {
	// DescriptorTTL is the descriptor lease. Default 5 s.
	DescriptorTTL time.Duration
	// Poll is how often discovery reads the mesh revision. Default 1 s.
	Poll time.Duration
	// InboundGrace is how long a missing inbound connection shows as
	// Connecting before NotConnected. Default 3 s.
	InboundGrace time.Duration
}

// ConfigureDiscovery sets the descriptor lease and discovery timing; zero
// fields keep their defaults, negative ones are refused.
func (b *MeshBuilder) ConfigureDiscovery(d DiscoveryConfig) *MeshBuilder {
	if d.DescriptorTTL < 0 || d.Poll < 0 || d.InboundGrace < 0 {
		b.refuse("", fmt.Sprintf("ConfigureDiscovery: negative setting in %+v", d))
		return b
	}
	if d.DescriptorTTL > 0 {
		b.cfg.DescriptorTTL = d.DescriptorTTL
	}
	if d.Poll > 0 {
		b.cfg.DiscoveryPoll = d.Poll
	}
	if d.InboundGrace > 0 {
		b.cfg.InboundGrace = d.InboundGrace
	}
	return b
}

// SetPlacementWeight sets the node's weight in Spot placement (an Object
// Server setting, independent of Channel weights; 0 takes no new Spots).
// Default 100.
func (b *MeshBuilder) SetPlacementWeight(w uint32) *MeshBuilder { b.cfg.PlacementWeight = w; return b }

// SetObjectRole sets the node's object role (default ObjectNone).
func (b *MeshBuilder) SetObjectRole(r ObjectRole) *MeshBuilder { b.cfg.ObjectRole = r; return b }

// SetTrust sets the shared secret of the trust profile ("" profile keeps
// "shared").
func (b *MeshBuilder) SetTrust(t TrustConfig) *MeshBuilder {
	if t.Profile == "" {
		t.Profile = "shared"
	}
	t.Secret = append([]byte(nil), t.Secret...)
	b.cfg.Trust = t
	return b
}

// SetTLS turns on TLS 1.3 with mutual authentication for the node's mesh
// links (see TLSConfig); the files are read and checked at Start. Without
// it the links are plaintext: the shared secret authenticates peers but
// does not protect traffic.
func (b *MeshBuilder) SetTLS(t TLSConfig) *MeshBuilder {
	b.cfg.TLS = &t
	return b
}

// AddPeer registers a manual connection intent.
func (b *MeshBuilder) AddPeer(endpoint, expectRID string) *MeshBuilder {
	b.cfg.Peers = append(b.cfg.Peers, PeerConfig{Endpoint: endpoint, ExpectRID: expectRID})
	return b
}

// SetConfigGeneration sets the version of the manual-peer configuration
// (at least 1; default 1).
func (b *MeshBuilder) SetConfigGeneration(g uint64) *MeshBuilder {
	if g == 0 {
		b.refuse("", "SetConfigGeneration: generation 0")
		return b
	}
	b.cfg.ConfigGeneration = g
	return b
}

// SetHandlerConcurrency sets the default number of handlers of one owner
// running at once (at least 1; default 64).
func (b *MeshBuilder) SetHandlerConcurrency(n int) *MeshBuilder {
	if n < 1 {
		b.refuse("", fmt.Sprintf("SetHandlerConcurrency: %d, want at least 1", n))
		return b
	}
	b.cfg.HandlerConcurrency = n
	return b
}

// SetHungDetection sets the hung-handler threshold (0 = never pause
// admission) and how often hung handlers are counted (0 keeps the default).
// Negative values are refused.
func (b *MeshBuilder) SetHungDetection(threshold int, every time.Duration) *MeshBuilder {
	if threshold < 0 || every < 0 {
		b.refuse("", fmt.Sprintf("SetHungDetection: threshold %d, interval %v", threshold, every))
		return b
	}
	b.cfg.HungThreshold = threshold
	if every > 0 {
		b.cfg.HungCheckInterval = every
	}
	return b
}

// SetSelectionSeed makes weighted selection deterministic (tests).
func (b *MeshBuilder) SetSelectionSeed(seed uint64) *MeshBuilder {
	b.cfg.SelectionSeed = seed
	return b
}

// SetLogger injects the logger; child loggers carry mesh and rid fields.
func (b *MeshBuilder) SetLogger(l zerolog.Logger) *MeshBuilder { b.cfg.Logger = l; return b }

// SetTimeouts sets the drain and shutdown timeouts (zero keeps the default;
// negative is refused).
func (b *MeshBuilder) SetTimeouts(drain, shutdown time.Duration) *MeshBuilder {
	if drain < 0 || shutdown < 0 {
		b.refuse("", fmt.Sprintf("SetTimeouts: drain %v, shutdown %v", drain, shutdown))
		return b
	}
	if drain > 0 {
		b.cfg.DrainTimeout = drain
	}
	if shutdown > 0 {
		b.cfg.ShutdownTimeout = shutdown
	}
	return b
}

// HandleDirectRequest registers a Node-direct request handler in this node's
// (MeshName, RID) scope. Not allowed on an Object Client. An empty packet
// name, a nil handler or a packet name registered twice is refused.
func (b *MeshBuilder) HandleDirectRequest(packet string, h RequestHandler) *MeshBuilder {
	if !b.checkHandler("", "HandleDirectRequest", packet, h == nil, b.cfg.directRequests[packet] != nil) {
		return b
	}
	if b.cfg.directRequests == nil {
		b.cfg.directRequests = map[string]RequestHandler{}
	}
	b.cfg.directRequests[packet] = h
	b.cfg.directRegs++
	return b
}

// HandleDirectSend registers a Node-direct one-way handler (same refusals
// as HandleDirectRequest).
func (b *MeshBuilder) HandleDirectSend(packet string, h SendHandler) *MeshBuilder {
	if !b.checkHandler("", "HandleDirectSend", packet, h == nil, b.cfg.directSends[packet] != nil) {
		return b
	}
	if b.cfg.directSends == nil {
		b.cfg.directSends = map[string]SendHandler{}
	}
	b.cfg.directSends[packet] = h
	b.cfg.directRegs++
	return b
}

// checkHandler records a refusal for a bad handler registration and
// reports whether the registration may go ahead.
func (b *MeshBuilder) checkHandler(channel, method, packet string, nilHandler, taken bool) bool {
	switch {
	case packet == "":
		b.refuse(channel, method+": empty packet name")
	case nilHandler:
		b.refuse(channel, method+": nil handler for packet "+packet)
	case taken:
		b.refuse(channel, method+": packet "+packet+" registered twice")
	default:
		return true
	}
	return false
}

// Channel starts the registration of one ChannelName on this MeshNode.
// Exactly one role per ChannelName: registering a name twice fails Start.
func (b *MeshBuilder) Channel(name string) *ChannelBuilder {
	return &ChannelBuilder{mesh: b, name: name}
}

// ChannelBuilder chooses the role of one ChannelName.
type ChannelBuilder struct {
	mesh *MeshBuilder
	name string
}

// Client registers the Client role: calls may start here; never a target.
func (c *ChannelBuilder) Client() *MeshBuilder {
	c.mesh.cfg.channels = append(c.mesh.cfg.channels, &channelReg{name: c.name, role: RoleClient})
	return c.mesh
}

// Server registers the Server role with the default weight.
func (c *ChannelBuilder) Server() *ServerBuilder {
	reg := &channelReg{
		name: c.name, role: RoleServer, weight: DefaultWeight,
		requests: map[string]RequestHandler{}, sends: map[string]SendHandler{},
	}
	c.mesh.cfg.channels = append(c.mesh.cfg.channels, reg)
	return &ServerBuilder{mesh: c.mesh, reg: reg}
}

// ServerBuilder sets the weight and handlers of a Server role.
type ServerBuilder struct {
	mesh *MeshBuilder
	reg  *channelReg
}

// SetConcurrency sets how many of this channel's handlers run at once
// (0 = the node's HandlerConcurrency, default 64; negative is refused).
func (s *ServerBuilder) SetConcurrency(n int) *ServerBuilder {
	if n < 0 {
		s.mesh.refuse(s.reg.name, fmt.Sprintf("SetConcurrency: %d", n))
		return s
	}
	s.reg.concurrency = n
	return s
}

// SetWeight sets the initial weight (0..10000; checked at Start).
func (s *ServerBuilder) SetWeight(w int) *ServerBuilder { s.reg.weight = w; return s }

// HandleRequest registers a request handler for a packet name. An empty
// packet name, a nil handler or a packet name registered twice on this
// channel is refused.
func (s *ServerBuilder) HandleRequest(packet string, h RequestHandler) *ServerBuilder {
	if s.mesh.checkHandler(s.reg.name, "HandleRequest", packet, h == nil, s.reg.requests[packet] != nil) {
		s.reg.requests[packet] = h
	}
	return s
}

// HandleSend registers a one-way handler for a packet name (same refusals
// as HandleRequest).
func (s *ServerBuilder) HandleSend(packet string, h SendHandler) *ServerBuilder {
	if s.mesh.checkHandler(s.reg.name, "HandleSend", packet, h == nil, s.reg.sends[packet] != nil) {
		s.reg.sends[packet] = h
	}
	return s
}

// Mesh returns the MeshNode builder, for chaining.
func (s *ServerBuilder) Mesh() *MeshBuilder { return s.mesh }
