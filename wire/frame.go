package wire

import (
	"strconv"
)

// ProtocolVersion is the version of the frame layout this build writes and
// the only one it reads.
const ProtocolVersion uint16 = 1

// MaxFrameSize is the wire's representation limit: every length on the wire
// is a uint32, so no frame, string or payload can be larger.
const MaxFrameSize uint64 = 1<<32 - 1

// MaxWeight is the largest Server weight a descriptor or weight update may
// carry.
const MaxWeight = 10000

// FrameType says which body a Frame carries.
type FrameType uint8

// Frame types. Values are part of the protocol: append only.
const (
	FrameHello FrameType = 1 + iota
	FrameWelcome
	FrameAuth
	FrameReject
	FrameBatch

	frameTypeEnd
)

var frameTypeNames = [...]string{
	FrameHello:   "hello",
	FrameWelcome: "welcome",
	FrameAuth:    "auth",
	FrameReject:  "reject",
	FrameBatch:   "batch",
}

func (t FrameType) String() string {
	if t >= 1 && t < frameTypeEnd {
		return frameTypeNames[t]
	}
	return "frame(" + strconv.Itoa(int(t)) + ")"
}

// Frame is one ZMQ message between two nodes. Exactly the body named by
// Type is set; the others are nil. An empty Batch decodes as nil.
type Frame struct {
	Type    FrameType
	Hello   *Hello
	Welcome *Welcome
	Auth    *Auth
	Reject  *Reject
	Batch   []Envelope
}

// Identity is what a node states about itself in the handshake: its
// MeshNode descriptor plus the limits and capabilities of this connection.
type Identity struct {
	Mesh             string            // MeshName
	RID              string            // Routing ID, unique within the mesh
	Generation       uint64            // lifecycle generation, non-zero, new on every start
	Revision         uint64            // descriptor revision, >= 1
	ObjectRole       uint8             // Spot object role (0 none; values owned by spot/)
	Servers          map[string]uint16 // Server ChannelName → weight (0..MaxWeight); may be empty
	SecurityIdentity string            // "profile:fingerprint" (Trust.SecurityIdentity), never the RID
	Endpoint         string            // the actual bound endpoint
	Protocol         uint16            // protocol version the node speaks
	Capabilities     []string          // optional features the node speaks
	RecvLimit        uint64            // largest frame this side accepts, bytes (<= MaxFrameSize)
	Draining         bool              // the node is draining
}

// Validate reports an error wrapping ErrProtocol when id breaks a rule of
// the descriptor (empty mesh or RID, zero generation or revision, no
// security identity or one equal to the RID, weight over MaxWeight, receive
// limit over MaxFrameSize).
func (id *Identity) Validate() error {
	if reason := id.problem(); reason != "" {
		return &DecodeError{Offset: -1, Reason: reason}
	}
	return nil
}

func (id *Identity) problem() string {
	switch {
	case id.Mesh == "":
		return "identity: empty mesh"
	case id.RID == "":
		return "identity: empty rid"
	case id.Generation == 0:
		return "identity: zero generation"
	case id.Revision == 0:
		return "identity: zero revision"
	case id.SecurityIdentity == "":
		return "identity: empty security identity"
	case id.SecurityIdentity == id.RID:
		return "identity: security identity equals rid"
	case id.RecvLimit > MaxFrameSize:
		return "identity: receive limit over MaxFrameSize"
	}
	for _, w := range id.Servers {
		if w > MaxWeight {
			return "identity: weight over MaxWeight"
		}
	}
	return ""
}

// Hello is the dialer's first frame.
type Hello struct {
	Identity
	Nonce            [16]byte // dialer's challenge; the Welcome proof covers it
	ExpectRID        string   // optional: the RID the dialer expects to reach
	ConfigGeneration uint64   // generation of the topology configuration the dial was made from
}

// Welcome is the listener's answer to Hello.
type Welcome struct {
	Identity
	Nonce [16]byte // listener's challenge; the Auth proof covers it
	Proof [32]byte // listener's proof over the dialer's nonce
}

// Auth is the dialer's proof over the listener's nonce; after it both sides
// are ready.
type Auth struct {
	Proof [32]byte
}

// Reject ends a handshake (or a connection) with a reason.
type Reject struct {
	Reason RejectReason
	Detail string // human-readable, for logs
}

// RejectReason says why a handshake was refused, or why a connection
// did not become ready: the one reason enum of the admission and
// handshake machines and of the Reject frame.
type RejectReason uint8

// Reject reasons. Values are part of the protocol: append only.
const (
	RejectWrongMesh RejectReason = 1 + iota
	RejectWrongRID
	RejectAuth
	RejectVersion
	RejectCapability
	RejectRIDCollision
	RejectNotRequired
	RejectDuplicate
	RejectStaleGeneration
	RejectShuttingDown
	RejectProtocol

	// Local reasons: a node decides them and never sends them (a Reject
	// frame carries RejectProtocol instead: OnWire); a peer that sends one
	// is read as RejectProtocol.

	// RejectTimeout: the handshake did not finish in time.
	RejectTimeout
	// RejectNoIntent: an outbound pipe whose dialing intent was withdrawn
	// or superseded.
	RejectNoIntent
	// RejectOldGenerationAlive: a new lifecycle of a peer waits for
	// liveness to confirm that the old one is gone.
	RejectOldGenerationAlive

	rejectEnd
	rejectSentEnd = RejectProtocol + 1 // one past the reasons a Reject frame carries
)

// OnWire is the reason a Reject frame carries for r: r itself, or
// RejectProtocol for a local reason.
func (r RejectReason) OnWire() RejectReason {
	if r >= 1 && r < rejectSentEnd {
		return r
	}
	return RejectProtocol
}

var rejectNames = [...]string{
	RejectWrongMesh:       "wrong_mesh",
	RejectWrongRID:        "wrong_rid",
	RejectAuth:            "auth",
	RejectVersion:         "version",
	RejectCapability:      "capability",
	RejectRIDCollision:    "rid_collision",
	RejectNotRequired:     "not_required",
	RejectDuplicate:       "duplicate",
	RejectStaleGeneration: "stale_generation",
	RejectShuttingDown:    "shutting_down",
	RejectProtocol:        "protocol",

	RejectTimeout:            "timeout",
	RejectNoIntent:           "no_intent",
	RejectOldGenerationAlive: "old_generation_alive",
}

func (r RejectReason) String() string {
	if r >= 1 && r < rejectEnd {
		return rejectNames[r]
	}
	return "reject(" + strconv.Itoa(int(r)) + ")"
}
