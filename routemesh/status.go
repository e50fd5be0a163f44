package routemesh

import (
	"sort"
	"strings"
	"time"
)

// NodeState is a MeshNode's lifecycle state.
type NodeState uint32

const (
	// NodeStarting: binding and registering.
	NodeStarting NodeState = 1 + iota
	// NodeReady: bound, admission ready, handlers registered.
	NodeReady
	// NodeDraining: out of new selection, serving submitted work.
	NodeDraining
	// NodeStopping: admitting nothing new, finishing in-flight work.
	NodeStopping
	// NodeStopped: sockets closed, goroutines ended.
	NodeStopped
	// NodeFailed: a supervised actor of the node could not be recovered
	// (its restarts went past the intensity limit). Terminal: every pending
	// and later call ends at once with ErrNodeFailed; health checks fail.
	// Stop still releases the node's resources.
	NodeFailed
)

// String returns the lower-case state name.
func (s NodeState) String() string {
	switch s {
	case NodeStarting:
		return "starting"
	case NodeReady:
		return "ready"
	case NodeDraining:
		return "draining"
	case NodeStopping:
		return "stopping"
	case NodeStopped:
		return "stopped"
	case NodeFailed:
		return "failed"
	default:
		return "invalid"
	}
}

// MarshalText encodes the state as its name.
func (s NodeState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// PeerState is how monitoring shows one peer.
type PeerState uint8

const (
	// PeerConnecting: dialing or in the handshake.
	PeerConnecting PeerState = 1 + iota
	// PeerReady: a ready connection.
	PeerReady
	// PeerNotConnected: a connection is required but none is ready — a failure.
	PeerNotConnected
	// PeerNotRequired: skipped by rule (two Object Clients without Channel
	// Server membership) — not a failure, not counted in health.
	PeerNotRequired
	// PeerDraining: ready, but the peer announced a drain.
	PeerDraining
)

// String returns the name monitoring shows.
func (s PeerState) String() string {
	switch s {
	case PeerConnecting:
		return "Connecting"
	case PeerReady:
		return "Ready"
	case PeerNotConnected:
		return "NotConnected"
	case PeerNotRequired:
		return "NotRequired"
	case PeerDraining:
		return "Draining"
	default:
		return "invalid"
	}
}

// MarshalText encodes the state as its name.
func (s PeerState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// PeerStatus is one peer or connection intent as monitoring shows it.
type PeerStatus struct {
	RID       string    `json:"rid"`
	State     PeerState `json:"state"`
	Endpoint  string    `json:"endpoint,omitempty"`
	Outbound  bool      `json:"outbound"`
	Pipe      string    `json:"pipe,omitempty"` // identity of the ready pipe (the dialer's socket identity: the same on both sides)
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since"`
	// Identity is the security identity the peer proved in the handshake
	// of its ready link (empty for a peer without one): the same as this
	// node's Security.Identity, since the handshake admits no other. With
	// TLS, Certificate is the identity its certificate names, verified by
	// the TLS handshake against the CAs and this node's own.
	Identity    string `json:"identity,omitempty"`
	Certificate string `json:"certificate,omitempty"`
	// Descriptor is true when the peer's expected identity (RID, positive
	// generation, security identity) comes from its Location Store
	// descriptor: every automatic peer, and a manual endpoint upgraded to
	// its descriptor. An endpoint-only manual connection claims no
	// placement and shows false.
	Descriptor bool `json:"descriptor,omitempty"`
}

// ChannelStatus is one ChannelName role of this node.
type ChannelStatus struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Weight int    `json:"weight"`
	// LastSelection is a recent select-one decision of this node on the
	// channel: one successful selection in 16 is recorded, and every one
	// that ended ErrNoTarget or ErrBusy.
	LastSelection *Selection `json:"last_selection,omitempty"`
}

// Security profiles of a MeshNode's mesh links (SecurityStatus.Profile).
const (
	// SecurityTLS: TLS 1.3 with mutual certificate authentication (and a
	// shared secret too when SecurityStatus.SharedSecret).
	SecurityTLS = "tls"
	// SecuritySharedSecret: peers prove a shared secret; traffic in clear.
	SecuritySharedSecret = "shared-secret"
	// SecurityNone: anyone who reaches the port joins.
	SecurityNone = "none"
)

// SecurityStatus is how a MeshNode authenticates its mesh links.
type SecurityStatus struct {
	// Profile is SecurityTLS, SecuritySharedSecret or SecurityNone.
	Profile string `json:"profile"`
	// Identity is the security identity the node states in handshakes and
	// descriptors (Node.SecurityIdentity).
	Identity string `json:"identity"`
	// Certificate is the identity this node's own certificate names (its
	// first URI SAN, or else its common name); TLS only.
	Certificate string `json:"certificate,omitempty"`
	// SharedSecret is true when peers must prove the shared secret (with
	// TLS, as well as their certificate).
	SharedSecret bool `json:"shared_secret,omitempty"`
}

// securityStatus describes the node's security profile.
func (n *Node) securityStatus() SecurityStatus {
	s := SecurityStatus{Profile: SecurityNone, Identity: n.trust.SecurityIdentity()}
	switch {
	case n.cfg.TLS != nil:
		s.Profile, s.SharedSecret = SecurityTLS, len(n.cfg.Trust.Secret) > 0
		s.Certificate = strings.TrimPrefix(n.trust.Profile, "tls:") // security() names the profile after it
	case n.trust.Authenticates():
		s.Profile, s.SharedSecret = SecuritySharedSecret, true
	}
	return s
}

// Status is a copied snapshot of one MeshNode.
type Status struct {
	Mesh       string            `json:"mesh"`
	RID        string            `json:"rid"`
	Generation uint64            `json:"generation"`
	Revision   uint64            `json:"revision"`
	State      NodeState         `json:"state"`
	Endpoint   string            `json:"endpoint"`
	ObjectRole string            `json:"object_role"`
	Peers      []PeerStatus      `json:"peers"`
	Channels   []ChannelStatus   `json:"channels"`
	Counters   map[string]uint64 `json:"counters"`
	Latency    []LatencyBucket   `json:"latency"`
	// LatencySum is the total time of the calls in Latency.
	LatencySum time.Duration `json:"latency_sum_ns"`
	Drained    bool          `json:"drained,omitempty"`
	Inflight   int64         `json:"inflight"`
	// Hung is the number of handlers running past their caller's deadline
	// at the last sweep; AdmissionPaused is true while the node refuses new
	// work because Hung reached the configured threshold.
	Hung            int64 `json:"hung"`
	AdmissionPaused bool  `json:"admission_paused"`
	// Failure says why the node is Failed (empty otherwise).
	Failure string `json:"failure,omitempty"`
	// Security is how the node authenticates its mesh links, and who it
	// is; each ready peer's proven identity is in Peers.
	Security SecurityStatus `json:"security"`
	// Served is what this node served, per handler scope (the Node-direct
	// scope first, then each Server channel): the other side of Counters
	// and Latency, which count the calls it made.
	Served []ServedStatus `json:"served"`
	// Members is the mesh as this node sees it — itself, its peers, the
	// Server channels each announced with their weights, and the peers
	// that went away in the last ten minutes (lost or departed, why and
	// when) — from what it holds, without a store read.
	Members []MemberStatus `json:"members,omitempty"`
	// Gone lists those peers' ends (at most 64, the last ten minutes), and
	// LastPeerLost the latest one that was lost (the reason behind the
	// peers_lost counter).
	Gone         []GonePeer `json:"gone,omitempty"`
	LastPeerLost *GonePeer  `json:"last_peer_lost,omitempty"`
}

// Peer returns the status of the peer with rid, if any.
func (s Status) Peer(rid string) (PeerStatus, bool) {
	for _, p := range s.Peers {
		if p.RID == rid {
			return p, true
		}
	}
	return PeerStatus{}, false
}

// CountPeers counts peers in state st.
func (s Status) CountPeers(st PeerState) int {
	n := 0
	for _, p := range s.Peers {
		if p.State == st {
			n++
		}
	}
	return n
}

func (m *meshActor) status() Status {
	st := m.n.baseStatus()
	seen := map[string]bool{}
	for _, l := range m.n.load().links {
		ps := PeerStatus{RID: l.rid, State: PeerReady, Outbound: l.p.outbound, Pipe: l.p.ident(), Since: l.p.started,
			Descriptor: m.descBacked(l.rid), Identity: l.p.remote.SecurityIdentity}
		if st.Security.Profile == SecurityTLS {
			ps.Certificate = st.Security.Certificate // TLS verified the peer names it
		}
		if l.draining.Load() {
			ps.State = PeerDraining
		}
		if l.p.intent != nil {
			ps.Endpoint = l.p.intent.cfg.Endpoint
		} else {
			ps.Endpoint = l.p.remote.Endpoint
		}
		seen[l.rid] = true
		st.Peers = append(st.Peers, ps)
	}
	for _, in := range m.intents {
		if in.rid != "" && seen[in.rid] {
			continue
		}
		rid := in.rid
		if rid == "" {
			rid = in.cfg.ExpectRID
		}
		state := in.state
		if state == PeerReady { // link gone, redial pending
			state = PeerNotConnected
		}
		st.Peers = append(st.Peers, PeerStatus{RID: rid, State: state, Endpoint: in.cfg.Endpoint,
			Outbound: true, LastError: errString(in.lastErr), Since: in.since, Descriptor: in.desc})
	}
	for rid, ap := range m.auto {
		if seen[rid] {
			continue
		}
		ps := PeerStatus{RID: rid, Endpoint: ap.endpoint, Since: ap.since, Descriptor: true}
		switch {
		case ap.kind == wantExcluded:
			ps.State = PeerNotRequired
		case time.Since(ap.since) < m.n.cfg.InboundGrace:
			// The peer has the smaller RID and dials us; within the grace
			// period this is an ordinary connection in progress.
			ps.State = PeerConnecting
		default:
			ps.State = PeerNotConnected
			ps.LastError = "no inbound connection: the peer has the smaller RID and must dial this node"
		}
		st.Peers = append(st.Peers, ps)
	}
	sort.Slice(st.Peers, func(i, j int) bool { return st.Peers[i].RID < st.Peers[j].RID })
	m.members(&st, time.Now())
	return st
}
