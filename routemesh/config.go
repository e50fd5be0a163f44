package routemesh

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// ObjectRole governs Spots: an Object Client only calls Spots, an Object
// Server hosts them. It is independent of Channel roles.
type ObjectRole uint8

const (
	// ObjectNone takes no part in Spots.
	ObjectNone ObjectRole = 1 + iota
	// ObjectClient calls Spots and never hosts one.
	ObjectClient
	// ObjectServer hosts Spots and can call them.
	ObjectServer
)

// String returns "none", "client" or "server".
func (r ObjectRole) String() string {
	switch r {
	case ObjectNone:
		return "none"
	case ObjectClient:
		return "client"
	case ObjectServer:
		return "server"
	default:
		return "invalid"
	}
}

// Role is a MeshNode's role on one ChannelName.
type Role uint8

const (
	// RoleClient may start calls on the channel; it is never a target.
	RoleClient Role = 1 + iota
	// RoleServer is published as a target with handlers and a weight.
	RoleServer
)

// String returns "client" or "server".
func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleServer:
		return "server"
	default:
		return "invalid"
	}
}

// Weight limits of a Channel Server (contract item 14: 0, 100 and 10000
// are accepted; -1 and 10001 are refused).
const (
	MinWeight     = 0
	MaxWeight     = 10000
	DefaultWeight = 100
)

// SocketConfig is what ConfigureRouterSocket sets. HWMs and timeouts are
// socket options per direction; the mailbox budgets are separate per-owner
// limits on what an owner holds for execution.
type SocketConfig struct {
	// SendHWM is the number of envelopes a peer's outbound queue holds before
	// new sends to that peer fail with ErrBusy. Default 1000.
	SendHWM int
	// ReceiveHWM is kept for the RouteMesh configuration contract, but there
	// is no per-peer receive queue for it to bound: the reader hands every
	// envelope to its owner at once, and the owner's mailbox budgets admit
	// or refuse it (ErrBusy). Default 1000.
	ReceiveHWM int
	// MailboxMessageBudget is the message budget of each owner (channel
	// server, Node-direct owner). Default 10000.
	MailboxMessageBudget int64
	// MailboxByteBudget is the byte budget of each owner. It also bounds the
	// largest message this node will ever receive (stated in the handshake).
	// Default 64 MiB.
	MailboxByteBudget int64
	// SendTimeout bounds one write to a peer's socket; a peer that does not
	// read for this long loses its connection. Default 5 s.
	SendTimeout time.Duration
	// ReceiveTimeout bounds the connection handshake. Default 5 s.
	ReceiveTimeout time.Duration
}

// DefaultSocketConfig returns the documented defaults.
func DefaultSocketConfig() SocketConfig {
	return SocketConfig{
		SendHWM:              1000,
		ReceiveHWM:           1000,
		MailboxMessageBudget: 10000,
		MailboxByteBudget:    64 << 20,
		SendTimeout:          5 * time.Second,
		ReceiveTimeout:       5 * time.Second,
	}
}

// withDefaults fills zero fields with defaults.
func (s SocketConfig) withDefaults() SocketConfig {
	d := DefaultSocketConfig()
	if s.SendHWM <= 0 {
		s.SendHWM = d.SendHWM
	}
	if s.ReceiveHWM <= 0 {
		s.ReceiveHWM = d.ReceiveHWM
	}
	if s.MailboxMessageBudget <= 0 {
		s.MailboxMessageBudget = d.MailboxMessageBudget
	}
	if s.MailboxByteBudget <= 0 {
		s.MailboxByteBudget = d.MailboxByteBudget
	}
	if s.SendTimeout <= 0 {
		s.SendTimeout = d.SendTimeout
	}
	if s.ReceiveTimeout <= 0 {
		s.ReceiveTimeout = d.ReceiveTimeout
	}
	return s
}

// LivenessConfig sets the heartbeat machine of every peer connection.
type LivenessConfig struct {
	// Interval between heartbeats. Default 500 ms.
	Interval time.Duration
	// MaxGap is how many heartbeats may go unanswered (symmetric loss)
	// before the peer is lost. Default 5.
	MaxGap int
	// LastHeard is how long a peer may stay silent (asymmetric loss) before
	// it is lost. Default 3 s.
	LastHeard time.Duration
}

// DefaultLivenessConfig returns the documented defaults.
func DefaultLivenessConfig() LivenessConfig {
	return LivenessConfig{Interval: 500 * time.Millisecond, MaxGap: 5, LastHeard: 3 * time.Second}
}

// Context is what a handler sees. A channel handler's context does not
// expose the MeshName.
type Context struct {
	context.Context
	// Channel is the ChannelName, "" for a Node-direct call.
	Channel string
	// Packet is the packet name.
	Packet string
	// From is the calling node's RID.
	From string
}

// RequestHandler answers a request with a reply payload or an error. The
// error reaches the caller as ErrHandler with its message. It runs on the
// owner's actor: it may block, but a handler past its deadline is reported.
type RequestHandler func(c *Context, payload []byte) ([]byte, error)

// SendHandler consumes a one-way message.
type SendHandler func(c *Context, payload []byte)

// PeerConfig is a manual connection intent.
type PeerConfig struct {
	// Endpoint is the peer's ROUTER endpoint, e.g. tcp://127.0.0.1:7001.
	Endpoint string
	// ExpectRID, when set, must equal the peer's RID or the connection fails.
	ExpectRID string
}

// TrustConfig is the shared-secret trust profile. Nodes with different
// secrets never become ready to each other.
type TrustConfig struct {
	// Profile names the profile, e.g. "shared". Default "shared".
	Profile string
	// Secret is the shared secret; it never crosses the wire.
	Secret []byte
}

type channelReg struct {
	name        string
	role        Role
	weight      int
	concurrency int
	requests    map[string]RequestHandler
	sends       map[string]SendHandler
}

// Config is one MeshNode's configuration. Fill it through MeshBuilder (or
// start from DefaultConfig); Start checks it and refuses a bad one with a
// *ConfigError. Every field's doc gives its unit and default.
type Config struct {
	// Mesh is the MeshName. Required; no default.
	Mesh string
	// Listen is the ROUTER bind endpoint, tcp://HOST:PORT (port 0 picks a
	// free one). Default tcp://127.0.0.1:0.
	Listen string
	// AdvertiseHost is the host peers should dial when it differs from the
	// bind address. Default "" (the bound address).
	AdvertiseHost string
	// RIDPrefix selects automatic topology: the RID is built from it.
	// Default "" (manual topology).
	RIDPrefix string
	// RID is the fixed Routing ID of a manual node. Default "" (generated).
	// Neither RID nor RIDPrefix may contain spaces or '/'.
	RID string
	// Socket holds HWMs, socket timeouts and mailbox budgets. Default
	// DefaultSocketConfig().
	Socket SocketConfig
	// Liveness is the heartbeat machine of every peer connection. Default
	// DefaultLivenessConfig(): 500 ms interval, max gap 5, last heard 3 s.
	Liveness LivenessConfig
	// ObjectRole is the node's Spot role. Default ObjectNone; ObjectClient
	// and ObjectServer need a Location Store.
	ObjectRole ObjectRole
	// PlacementWeight weighs this node in Spot placement (an Object Server
	// setting, independent of Channel weights). Default 100.
	PlacementWeight uint32
	// Peers are the manual connection intents. Default none; not allowed on
	// an automatic node.
	Peers []PeerConfig
	// ConfigGeneration is the version of the manual-peer configuration.
	// Default 1.
	ConfigGeneration uint64
	// Trust is the shared-secret trust profile. Default profile "shared",
	// no secret.
	Trust TrustConfig
	// DrainTimeout bounds how long Drain waits for submitted work. Default 10 s.
	DrainTimeout time.Duration
	// ShutdownTimeout bounds how long Stop waits for in-flight work. Default 5 s.
	ShutdownTimeout time.Duration
	// DescriptorTTL is the lease of this node's descriptor in the Location
	// Store; the owner renews it every DescriptorTTL/3. At least 10 ms.
	// Default 5 s.
	DescriptorTTL time.Duration
	// DiscoveryPoll is how often the discovery actor re-lists descriptors
	// (besides the store's push hints) to see expiries, recover lost pushes
	// and converge weights. Default 1 s.
	DiscoveryPoll time.Duration
	// InboundGrace is how long an automatic node waits for a peer with a
	// smaller RID to dial it before monitoring shows that peer NotConnected
	// instead of Connecting. Default 3 s.
	InboundGrace time.Duration
	// Logger is the node's logger; child loggers carry mesh and rid.
	// Default zerolog.Nop() (the host's logger when started through zlink).
	Logger zerolog.Logger
	// HandlerConcurrency is how many handlers of one owner (a Server
	// channel, or the Node-direct scope) run at once. At least 1. Default
	// 64; 1 gives strictly one-at-a-time handling.
	HandlerConcurrency int
	// HungThreshold is how many handlers running past their caller's
	// deadline make the node stop admitting new work (ErrBusy) until fewer
	// remain. Default 64; 0 turns the pause off (hung handlers are still
	// counted and shown in the tree and status).
	HungThreshold int
	// HungCheckInterval is how often hung handlers are counted. Default 1 s.
	HungCheckInterval time.Duration
	// SelectionSeed seeds weighted selection; 0 = random. Default 0. Tests
	// set it.
	SelectionSeed uint64

	channels       []*channelReg
	directRequests map[string]RequestHandler
	directSends    map[string]SendHandler
	directRegs     int
	// buildErr is the first setting a builder method refused; Start
	// returns it.
	buildErr error
}

// DefaultConfig returns a Config with every documented default and no
// MeshName: set Mesh (and whatever else) before Start.
func DefaultConfig() Config {
	return Config{
		Listen:             "tcp://127.0.0.1:0",
		Socket:             DefaultSocketConfig(),
		Liveness:           DefaultLivenessConfig(),
		ObjectRole:         ObjectNone,
		PlacementWeight:    100,
		ConfigGeneration:   1,
		Trust:              TrustConfig{Profile: "shared"},
		DrainTimeout:       10 * time.Second,
		ShutdownTimeout:    5 * time.Second,
		DescriptorTTL:      5 * time.Second,
		DiscoveryPoll:      time.Second,
		InboundGrace:       3 * time.Second,
		Logger:             zerolog.Nop(),
		HandlerConcurrency: 64,
		HungThreshold:      64,
		HungCheckInterval:  time.Second,
	}
}

// clone returns a deep copy: slices, maps and channel registrations are
// copied, so changing the copy never changes the original.
func (c *Config) clone() *Config {
	out := *c
	out.Peers = append([]PeerConfig(nil), c.Peers...)
	out.Trust.Secret = append([]byte(nil), c.Trust.Secret...)
	if c.Trust.Secret == nil {
		out.Trust.Secret = nil
	}
	out.channels = make([]*channelReg, len(c.channels))
	for i, reg := range c.channels {
		r := *reg
		r.requests = cloneMap(reg.requests)
		r.sends = cloneMap(reg.sends)
		out.channels[i] = &r
	}
	out.directRequests = cloneMap(c.directRequests)
	out.directSends = cloneMap(c.directSends)
	return &out
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

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
	// Poll is the discovery re-list interval. Default 1 s.
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

// Automatic reports whether this node uses automatic topology.
func (c *Config) Automatic() bool { return c.RIDPrefix != "" }
