package handshake

import (
	"strconv"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/admission"
	"github.com/zlink-go/zlink/wire"
)

// State is where one pipe's handshake is.
type State uint8

const (
	// AwaitHello: a listener pipe created before its Hello was applied.
	AwaitHello State = 1 + iota
	// AwaitDial: a dialer pipe whose transport is not connected yet.
	AwaitDial
	// HelloSent: the dialer waits for the Welcome.
	HelloSent
	// WelcomeSent: the listener waits for the Auth.
	WelcomeSent
	// AuthSent: the dialer waits for the listener's first Batch.
	AuthSent
	// AckSent: the listener is the follower; it acknowledged the Auth with a
	// first Batch and waits for the arbiter's first Batch.
	AckSent
	// Ready: the pipe is the ready connection to the peer. Terminal.
	Ready
	// Closed: the handshake failed or was refused. Terminal.
	Closed
)

// String returns the state's lower-case name.
func (s State) String() string {
	switch s {
	case AwaitHello:
		return "await hello"
	case AwaitDial:
		return "await dial"
	case HelloSent:
		return "hello sent"
	case WelcomeSent:
		return "welcome sent"
	case AuthSent:
		return "auth sent"
	case AckSent:
		return "ack sent"
	case Ready:
		return "ready"
	case Closed:
		return "closed"
	default:
		return "state(" + strconv.Itoa(int(s)) + ")"
	}
}

// Frame is a handshake frame the driver must build and send. The driver
// fills in the contents (identity, nonces, proofs); the machine only says
// which frame goes out when.
type Frame uint8

const (
	// FrameHello: the dialer's first frame (identity, nonce, expected RID).
	FrameHello Frame = 1 + iota
	// FrameWelcome: the listener's answer (identity, nonce, proof).
	FrameWelcome
	// FrameAuth: the dialer's proof.
	FrameAuth
	// FrameBatch: a first Batch carrying a heartbeat. From the arbiter it
	// declares the pipe ready; from a listener that is the follower it
	// acknowledges the Auth.
	FrameBatch
	// FrameReject: a refusal; Output.Reason and Output.Detail say why.
	FrameReject
)

// String returns the frame's name.
func (f Frame) String() string {
	switch f {
	case FrameHello:
		return "hello"
	case FrameWelcome:
		return "welcome"
	case FrameAuth:
		return "auth"
	case FrameBatch:
		return "batch"
	case FrameReject:
		return "reject"
	default:
		return "frame(" + strconv.Itoa(int(f)) + ")"
	}
}

// Reason says why a handshake ended without a ready connection (the one
// reason enum of the handshake, shared with admission and the Reject
// frame).
type Reason = wire.RejectReason

const (
	// WrongMesh: the peer belongs to another MeshName.
	WrongMesh = wire.RejectWrongMesh
	// WrongRID: the peer is not the RID the dialer expects.
	WrongRID = wire.RejectWrongRID
	// AuthFailed: a proof failed or the security identity differs.
	AuthFailed = wire.RejectAuth
	// Version: another protocol version.
	Version = wire.RejectVersion
	// Capability: a required capability is missing.
	Capability = wire.RejectCapability
	// RIDCollision: the peer claims the local RID.
	RIDCollision = wire.RejectRIDCollision
	// StaleGeneration: a generation that is not the expected one, or a new
	// generation while the old one's connection is still alive.
	StaleGeneration = wire.RejectStaleGeneration
	// NotRequired: both sides are Object Clients without Channel Server
	// membership. Terminal for the intent; not a failure.
	NotRequired = wire.RejectNotRequired
	// Duplicate: the arbiter already has a ready pipe to this lifecycle.
	Duplicate = wire.RejectDuplicate
	// Protocol: a frame out of order or malformed.
	Protocol = wire.RejectProtocol
	// Timeout: the handshake did not finish in time.
	Timeout = wire.RejectTimeout
	// NoIntent: an outbound pipe whose intent was withdrawn or superseded.
	NoIntent = wire.RejectNoIntent
	// ShuttingDown: the peer no longer admits connections.
	ShuttingDown = wire.RejectShuttingDown
)

// EventKind is what happened on the pipe.
type EventKind uint8

const (
	// Dialed: the dialer's transport is connected; send the Hello.
	Dialed EventKind = 1 + iota
	// HelloReceived: the listener got the Hello (Remote, ExpectRID).
	HelloReceived
	// WelcomeReceived: the dialer got the Welcome (Remote, ProofOK).
	WelcomeReceived
	// AuthReceived: the listener got the Auth (ProofOK).
	AuthReceived
	// BatchReceived: a Batch arrived before the pipe was ready.
	BatchReceived
	// RejectReceived: the peer refused (Reason, Detail).
	RejectReceived
	// Malformed: the peer sent something that breaks the protocol (Detail).
	Malformed
	// Tick: the timer set from Output.Deadline fired.
	Tick
)

// String returns the event kind's name.
func (k EventKind) String() string {
	switch k {
	case Dialed:
		return "dialed"
	case HelloReceived:
		return "hello"
	case WelcomeReceived:
		return "welcome"
	case AuthReceived:
		return "auth"
	case BatchReceived:
		return "batch"
	case RejectReceived:
		return "reject"
	case Malformed:
		return "malformed"
	case Tick:
		return "tick"
	default:
		return "event(" + strconv.Itoa(int(k)) + ")"
	}
}

// Event is one input to Step. Only the fields its Kind names are read.
type Event struct {
	Kind EventKind
	// Remote is the identity the peer stated (Hello, Welcome).
	Remote admission.Identity
	// ExpectRID is the RID the dialer expects to reach (Hello); "" = any.
	ExpectRID string
	// ProofOK reports whether the peer's proof verified (Welcome, Auth).
	ProofOK bool
	// Reason is the peer's refusal (RejectReceived).
	Reason Reason
	// Detail is human-readable (RejectReceived, Malformed).
	Detail string
}

// Output is what Step asks the driver to do. With Ready: close the pipe
// named by Replace (if any), make the pipe ready, then send Send (the
// arbiter's ready announcement). With Close: send Send (a Reject), then
// close the pipe. Otherwise: send Send (if any). In every case, arm a timer
// for Deadline (if not zero).
type Output struct {
	// Send is the frame to send now; 0 for none.
	Send Frame
	// Reason says why the pipe closes (with Close) and fills a Reject frame.
	Reason Reason
	// Detail is a human-readable explanation, for the Reject frame and logs.
	Detail string
	// Ready: the pipe is now the one ready connection to the peer.
	Ready bool
	// Replace (with Ready, on the follower only): an older pipe of the same
	// peer lifecycle that the arbiter has already let go; close it.
	Replace string
	// Close: the handshake ended without a ready connection; close the pipe
	// (after sending Send). The machine never closes a ready pipe.
	Close bool
	// ByPeer (with Close): the peer refused; no Reject is sent back.
	ByPeer bool
	// Deadline is when to Step a Tick; zero once the handshake is over.
	Deadline time.Time
}

// Config bounds a handshake.
type Config struct {
	// Timeout is how long a handshake may take from its start (the dial, or
	// the Hello on the listener) to ready. Must be > 0.
	Timeout time.Duration
}
