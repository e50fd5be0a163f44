package routemesh

import (
	"context"
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

// Weight limits (reference 004 §5).
const (
	MinWeight     = 0
	MaxWeight     = 10000
	DefaultWeight = 100
)

// SocketConfig is what ConfigureRouterSocket sets. HWMs and timeouts are
// socket options per direction; the mailbox budgets are separate per-owner
// limits on what an owner holds for execution (reference 004 §11).
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
// expose the MeshName (reference 004 §7).
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

// Config is one MeshNode's configuration, filled through MeshBuilder.
type Config struct {
	Mesh             string
	Listen           string
	AdvertiseHost    string
	RIDPrefix        string
	RID              string
	Socket           SocketConfig
	Liveness         LivenessConfig
	ObjectRole       ObjectRole
	PlacementWeight  uint32
	Peers            []PeerConfig
	ConfigGeneration uint64
	Trust            TrustConfig
	// DrainTimeout bounds how long Drain waits for submitted work. Default 10 s.
	DrainTimeout time.Duration
	// ShutdownTimeout bounds how long Stop waits for in-flight work. Default 5 s.
	ShutdownTimeout time.Duration
	// DescriptorTTL is the lease of this node's descriptor in the Location
	// Store; the owner renews it every DescriptorTTL/3. Default 5 s.
	DescriptorTTL time.Duration
	// DiscoveryPoll is how often the discovery actor re-lists descriptors
	// (besides the store's push hints) to see expiries, recover lost pushes
	// and converge weights. Default 1 s.
	DiscoveryPoll time.Duration
	// InboundGrace is how long an automatic node waits for a peer with a
	// smaller RID to dial it before monitoring shows that peer NotConnected
	// instead of Connecting. Default 3 s.
	InboundGrace time.Duration
	Logger       zerolog.Logger
	// HandlerConcurrency is how many handlers of one owner (a Server
	// channel, or the Node-direct scope) run at once. Default 64; 1 gives
	// strictly one-at-a-time handling.
	HandlerConcurrency int
	// HungThreshold is how many handlers running past their caller's
	// deadline make the node stop admitting new work (ErrBusy) until fewer
	// remain. Default 64; 0 turns the pause off (hung handlers are still
	// counted and shown in the tree and status).
	HungThreshold int
	// HungCheckInterval is how often hung handlers are counted. Default 1 s.
	HungCheckInterval time.Duration
	// SelectionSeed seeds weighted selection; 0 = random. Tests set it.
	SelectionSeed uint64

	channels       []*channelReg
	directRequests map[string]RequestHandler
	directSends    map[string]SendHandler
	directRegs     int
}

// MeshBuilder registers one MeshNode. Its methods record settings; all
// checks happen at Start.
type MeshBuilder struct{ cfg *Config }

// NewMeshBuilder starts the configuration of the MeshNode of mesh name.
func NewMeshBuilder(name string) *MeshBuilder {
	return &MeshBuilder{cfg: &Config{
		Mesh:               name,
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
	}}
}

// Config returns the recorded configuration (shared, not copied).
func (b *MeshBuilder) Config() *Config { return b.cfg }

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
// keep their defaults.
func (b *MeshBuilder) ConfigureRouterSocket(s SocketConfig) *MeshBuilder {
	b.cfg.Socket = s.withDefaults()
	return b
}

// ConfigureLiveness sets the heartbeat machine; zero fields keep defaults.
func (b *MeshBuilder) ConfigureLiveness(l LivenessConfig) *MeshBuilder {
	d := DefaultLivenessConfig()
	if l.Interval <= 0 {
		l.Interval = d.Interval
	}
	if l.MaxGap <= 0 {
		l.MaxGap = d.MaxGap
	}
	if l.LastHeard <= 0 {
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

// ConfigureDiscovery sets the descriptor lease and discovery timing.
func (b *MeshBuilder) ConfigureDiscovery(d DiscoveryConfig) *MeshBuilder {
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

// SetTrust sets the shared secret of the trust profile.
func (b *MeshBuilder) SetTrust(t TrustConfig) *MeshBuilder {
	if t.Profile == "" {
		t.Profile = "shared"
	}
	b.cfg.Trust = t
	return b
}

// AddPeer registers a manual connection intent.
func (b *MeshBuilder) AddPeer(endpoint, expectRID string) *MeshBuilder {
	b.cfg.Peers = append(b.cfg.Peers, PeerConfig{Endpoint: endpoint, ExpectRID: expectRID})
	return b
}

// SetConfigGeneration sets the version of the manual-peer configuration.
func (b *MeshBuilder) SetConfigGeneration(g uint64) *MeshBuilder {
	b.cfg.ConfigGeneration = g
	return b
}

// SetHandlerConcurrency sets the default number of handlers of one owner
// running at once (default 64).
func (b *MeshBuilder) SetHandlerConcurrency(n int) *MeshBuilder {
	if n > 0 {
		b.cfg.HandlerConcurrency = n
	}
	return b
}

// SetHungDetection sets the hung-handler threshold (0 = never pause
// admission) and how often hung handlers are counted (0 keeps the default).
func (b *MeshBuilder) SetHungDetection(threshold int, every time.Duration) *MeshBuilder {
	if threshold >= 0 {
		b.cfg.HungThreshold = threshold
	}
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

// SetTimeouts sets the drain and shutdown timeouts (zero keeps the default).
func (b *MeshBuilder) SetTimeouts(drain, shutdown time.Duration) *MeshBuilder {
	if drain > 0 {
		b.cfg.DrainTimeout = drain
	}
	if shutdown > 0 {
		b.cfg.ShutdownTimeout = shutdown
	}
	return b
}

// HandleDirectRequest registers a Node-direct request handler in this node's
// (MeshName, RID) scope. Not allowed on an Object Client.
func (b *MeshBuilder) HandleDirectRequest(packet string, h RequestHandler) *MeshBuilder {
	if b.cfg.directRequests == nil {
		b.cfg.directRequests = map[string]RequestHandler{}
	}
	b.cfg.directRequests[packet] = h
	b.cfg.directRegs++
	return b
}

// HandleDirectSend registers a Node-direct one-way handler.
func (b *MeshBuilder) HandleDirectSend(packet string, h SendHandler) *MeshBuilder {
	if b.cfg.directSends == nil {
		b.cfg.directSends = map[string]SendHandler{}
	}
	b.cfg.directSends[packet] = h
	b.cfg.directRegs++
	return b
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
// (default: the node's HandlerConcurrency, 64).
func (s *ServerBuilder) SetConcurrency(n int) *ServerBuilder { s.reg.concurrency = n; return s }

// SetWeight sets the initial weight (0..10000; checked at Start).
func (s *ServerBuilder) SetWeight(w int) *ServerBuilder { s.reg.weight = w; return s }

// HandleRequest registers a request handler for a packet name.
func (s *ServerBuilder) HandleRequest(packet string, h RequestHandler) *ServerBuilder {
	s.reg.requests[packet] = h
	return s
}

// HandleSend registers a one-way handler for a packet name.
func (s *ServerBuilder) HandleSend(packet string, h SendHandler) *ServerBuilder {
	s.reg.sends[packet] = h
	return s
}

// Mesh returns the MeshNode builder, for chaining.
func (s *ServerBuilder) Mesh() *MeshBuilder { return s.mesh }

// Automatic reports whether this node uses automatic topology.
func (c *Config) Automatic() bool { return c.RIDPrefix != "" }
