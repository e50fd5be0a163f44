package admission

import (
	"strconv"

	"github.com/zlink-go/zlink/wire"
)

// ObjectRole is a MeshNode's Spot role as proved in the handshake.
type ObjectRole uint8

const (
	// RoleNone hosts no Spots and calls none through the object path.
	RoleNone ObjectRole = 1 + iota
	// RoleClient only calls Spots and never hosts one.
	RoleClient
	// RoleServer hosts Spots and can call them.
	RoleServer
)

// String returns "none", "client" or "server".
func (r ObjectRole) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleClient:
		return "client"
	case RoleServer:
		return "server"
	default:
		return "object-role(" + strconv.Itoa(int(r)) + ")"
	}
}

// Identity is what one side of a peer pipe proves in the handshake.
type Identity struct {
	Mesh       string     // MeshName
	RID        string     // Routing ID, unique within the mesh
	Generation uint64     // lifecycle generation; non-zero; compared for equality only
	Revision   uint64     // descriptor revision (weight information), >= 1
	ObjectRole ObjectRole // Spot role
	// ServerChannels is the number of RouteMesh Channel Server memberships,
	// weight 0 included. Channel Client roles, ClientServer and fanout do not
	// count.
	ServerChannels int
	// SecurityIdentity is the identity of the credentials proved in the
	// handshake (shared-secret profile: profile name + key fingerprint). It
	// is never the RID.
	SecurityIdentity string
	Protocol         uint16   // wire protocol version
	Capabilities     []string // capabilities this side supports
}

// Intent is a manual (or descriptor-based) connection intent: what the
// local configuration expects to find behind an endpoint it dials.
type Intent struct {
	Endpoint         string // the dialled endpoint
	ExpectRID        string // "" = learn the RID from the handshake
	ExpectGeneration uint64 // 0 = any (endpoint-only intent); descriptor-based intents set it
	ExpectSecurity   string // "" = the local trust profile's identity is enough
	// ConfigGeneration is the version of the local manual-peer configuration
	// that produced this intent. It only grows; an intent with a smaller
	// ConfigGeneration than one already seen for the same Endpoint is
	// superseded.
	ConfigGeneration uint64
}

// Pipe is one transport pipe whose handshake has finished.
type Pipe struct {
	ID       string  // unique pipe identity on this node
	Outbound bool    // true when this node dialled
	Intent   *Intent // the intent that dialled; nil for inbound pipes
}

// Verdict is the outcome of Admit.
type Verdict uint8

const (
	// Accept makes the pipe the current ready connection to the peer.
	Accept Verdict = 1 + iota
	// Reject refuses the pipe; Decision.Reason says why. Close the pipe.
	Reject
	// NotRequired is the terminal result for a pair that needs no
	// connection. Close the pipe before ready; do not count it as a failure.
	NotRequired
	// Duplicate: the arbiter already has a ready pipe to this peer
	// lifecycle; the new pipe is refused and must be closed before ready.
	Duplicate
	// Replace: on the follower only, the arbiter declared the new pipe ready
	// while the follower still holds an older pipe of the same lifecycle
	// (the arbiter has already let it go). The new pipe becomes current and
	// the old pipe (Decision.Close) must be closed.
	Replace
	// Defer: the peer restarted with a new generation while the old
	// lifecycle's connection has not been confirmed gone. Close the new pipe
	// and retry later.
	Defer
)

// String returns the verdict's lower-case name.
func (v Verdict) String() string {
	switch v {
	case Accept:
		return "accept"
	case Reject:
		return "reject"
	case NotRequired:
		return "not required"
	case Duplicate:
		return "duplicate"
	case Replace:
		return "replace"
	case Defer:
		return "defer"
	default:
		return "verdict(" + strconv.Itoa(int(v)) + ")"
	}
}

// Reason explains a verdict other than Accept (the one reason enum of
// the handshake, shared with the Reject frame). The zero Reason
// accompanies Accept.
type Reason = wire.RejectReason

const (
	// WrongMesh: the remote belongs to another MeshName.
	WrongMesh = wire.RejectWrongMesh
	// WrongRID: the remote RID differs from the intent's expected RID.
	WrongRID = wire.RejectWrongRID
	// AuthFailed: not authenticated, or a different security identity.
	AuthFailed = wire.RejectAuth
	// Version: a different protocol version.
	Version = wire.RejectVersion
	// Capability: a required capability is missing on the remote.
	Capability = wire.RejectCapability
	// RIDCollision: the remote claims the local RID.
	RIDCollision = wire.RejectRIDCollision
	// StaleGeneration: generation 0, or not the generation the intent
	// expects.
	StaleGeneration = wire.RejectStaleGeneration
	// OldGenerationAlive: a new generation waits for liveness to confirm
	// that the old one is gone.
	OldGenerationAlive = wire.RejectOldGenerationAlive
	// NotRequiredPair: both sides are Object Clients without any Channel
	// Server membership.
	NotRequiredPair = wire.RejectNotRequired
	// DuplicatePipe: a second pipe to the same peer lifecycle.
	DuplicatePipe = wire.RejectDuplicate
	// NoIntent: an outbound pipe without a live intent (none, or one
	// superseded by a newer configuration generation).
	NoIntent = wire.RejectNoIntent
)

// Decision is what the driver must do with an admitted pipe.
type Decision struct {
	Verdict Verdict
	Reason  Reason
	// Close is the pipe the driver must close: the new pipe for Reject,
	// NotRequired, Duplicate and Defer; the old pipe for Replace; "" for
	// Accept.
	Close string
}
