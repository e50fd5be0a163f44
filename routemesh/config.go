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
	// SendTimeout bounds one write to a peer's socket (each MiB of it): a
	// peer that does not read for this long loses its connection. The node
	// writes to all its inbound peers through one socket, so while a write
	// to a peer that stopped reading waits out this timeout, the heartbeats
	// to every other peer wait too: it must stay below what a peer may stay
	// silent before it is lost (the smaller of LivenessConfig.LastHeard and
	// MaxGap heartbeat intervals) less one interval, or one stuck peer
	// costs the node all the others; and the others' calls wait that long.
	// Zero (the default) derives it from the liveness settings: a quarter
	// of that margin, at least 250 ms — 500 ms with the default liveness.
	// A peer that reads is never near it: a write blocks only once the
	// kernel's buffers toward that peer (megabytes) are full.
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
	// RID is the RID of the node running the handler (its own node), so a
	// handler can say who answered without capturing its Node.
	RID string

	node *Node
}

// Node returns the node running the handler.
func (c *Context) Node() *Node { return c.node }

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
// secrets never become ready to each other. It authenticates peers but
// does not protect traffic (frames cross the network in clear): for that,
// add TLS (TLSConfig).
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
// *ConfigError. Every field's doc gives its unit and default; every
// numeric field has a range (Limits), checked at Start.
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
	// TLS, when set, runs every mesh link over TLS 1.3 with mutual
	// authentication (see TLSConfig). Default nil: plaintext links.
	TLS *TLSConfig
	// DrainTimeout bounds how long Drain waits for submitted work. Default 10 s.
	DrainTimeout time.Duration
	// ShutdownTimeout bounds how long Stop waits for in-flight work. Default 5 s.
	ShutdownTimeout time.Duration
	// DescriptorTTL is the lease of this node's descriptor in the Location
	// Store; the owner renews it every DescriptorTTL/3. At least 10 ms.
	// Default 5 s.
	DescriptorTTL time.Duration
	// DiscoveryPoll is how often the discovery actor reads the mesh
	// revision (besides the store's push hints), and what changed when it
	// moved, to recover lost pushes and converge weights. Default 1 s.
	DiscoveryPoll time.Duration
	// InboundGrace is how long an automatic node waits for a peer with a
	// smaller RID to dial it before monitoring shows that peer NotConnected
	// instead of Connecting. Default 3 s.
	InboundGrace time.Duration
	// Logger is the node's logger; child loggers carry mesh and rid.
	// Default zerolog.Nop() (the host's logger when started through zlink).
	Logger zerolog.Logger
	// Tracer, when set, traces requests, one-way messages and handlers
	// (see Tracer); nil = off.
	Tracer Tracer
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
	directDeferred map[string]DeferredHandler
	directRegs     int
	extensions     []extensionReg
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
	if c.TLS != nil {
		t := *c.TLS
		out.TLS = &t
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
	out.directDeferred = cloneMap(c.directDeferred)
	out.extensions = append([]extensionReg(nil), c.extensions...)
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

// Automatic reports whether this node uses automatic topology.
func (c *Config) Automatic() bool { return c.RIDPrefix != "" }

// minSendTimeout is the least send timeout derived from liveness settings.
const minSendTimeout = 250 * time.Millisecond

// silence is how long a peer may go unheard before liveness drops it: the
// smaller of LastHeard and MaxGap intervals.
func (l LivenessConfig) silence() time.Duration {
	return min(l.LastHeard, time.Duration(l.MaxGap)*l.Interval)
}

// sendTimeoutMargin is what a send timeout must stay below: a peer's
// silence limit less one heartbeat interval.
func (l LivenessConfig) sendTimeoutMargin() time.Duration { return l.silence() - l.Interval }

// sendTimeout is the send timeout in force: the configured one, or the one
// derived from the liveness settings (see SocketConfig.SendTimeout).
func (c *Config) sendTimeout() time.Duration {
	if c.Socket.SendTimeout > 0 {
		return c.Socket.SendTimeout
	}
	return max(minSendTimeout, c.Liveness.sendTimeoutMargin()/4)
}
