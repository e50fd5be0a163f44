package admission

import (
	"bytes"
	"fmt"
	"slices"
)

// Machine is the admission state of one MeshNode. It is owned by a single
// goroutine (the MeshNode actor) and is not safe for concurrent use.
type Machine struct {
	local        Identity
	requiredCaps []string

	// current is the one ready pipe per remote RID.
	current map[string]currentPipe
	// byPipe maps a current pipe ID back to its RID.
	byPipe map[string]string
	// notRequired holds intents that ended NotRequired.
	notRequired map[intentKey]struct{}
	// configGen is the largest ConfigGeneration seen per endpoint.
	configGen map[string]uint64
}

type currentPipe struct {
	id       string
	gen      uint64
	outbound bool
}

type intentKey struct {
	endpoint  string
	expectRID string
	configGen uint64
}

func keyOf(in Intent) intentKey {
	return intentKey{endpoint: in.Endpoint, expectRID: in.ExpectRID, configGen: in.ConfigGeneration}
}

// New returns the admission machine of a MeshNode with the given local
// identity. requiredCaps are the capabilities every remote must support.
// It panics (with an error wrapping ErrInvalidIdentity) when the local
// identity has no MeshName, no RID, generation 0 or no security identity.
func New(local Identity, requiredCaps []string) *Machine {
	if local.Mesh == "" || local.RID == "" || local.Generation == 0 || local.SecurityIdentity == "" {
		panic(fmt.Errorf("%w: mesh %q rid %q generation %d security identity %q",
			ErrInvalidIdentity, local.Mesh, local.RID, local.Generation, local.SecurityIdentity))
	}
	local.Capabilities = slices.Clone(local.Capabilities)
	return &Machine{
		local:        local,
		requiredCaps: slices.Clone(requiredCaps),
		current:      make(map[string]currentPipe),
		byPipe:       make(map[string]string),
		notRequired:  make(map[intentKey]struct{}),
		configGen:    make(map[string]uint64),
	}
}

// Local returns the local identity the machine was created with.
func (m *Machine) Local() Identity {
	l := m.local
	l.Capabilities = slices.Clone(l.Capabilities)
	return l
}

// NeedsConnection reports whether two MeshNodes of one mesh need a peer
// connection. It is false only when both are Object Clients and neither has
// any RouteMesh Channel Server membership (weight 0 counts as membership).
func NeedsConnection(a, b Identity) bool {
	return !(a.ObjectRole == RoleClient && b.ObjectRole == RoleClient &&
		a.ServerChannels == 0 && b.ServerChannels == 0)
}

// Initiator reports whether the local node dials the remote one in automatic
// topology: only the node whose RID is smaller in canonical byte order does.
func Initiator(localRID, remoteRID string) bool {
	return bytes.Compare([]byte(localRID), []byte(remoteRID)) < 0
}

// Arbiter reports whether the local node arbitrates duplicate pipes with
// the remote one: the node whose RID is smaller in canonical byte order
// does. The arbiter keeps one pipe per remote lifecycle and refuses the
// others; the other side (the follower) becomes ready only on a pipe the
// arbiter declared ready. Both sides compute the same answer.
func Arbiter(localRID, remoteRID string) bool { return Initiator(localRID, remoteRID) }

// Check runs every admission rule for pipe p while its handshake is still
// going on, without making it current. authenticated reports whether the
// trust-profile challenge succeeded.
//
// The rules apply in this order: MeshName; authentication and security
// identity; protocol version and required capabilities; expected RID;
// generation (0 is never valid; an intent's expected generation must match);
// RID collision with the local node; a live intent for outbound pipes;
// connection need (NotRequired, remembered for the intent); a different
// generation while the old one is current (Defer); on the arbiter, a second
// pipe to the current lifecycle (Duplicate). A follower passes a second pipe
// of the current lifecycle on: only the arbiter refuses duplicates.
func (m *Machine) Check(p Pipe, remote Identity, authenticated bool) Decision {
	if d, done := m.rules(p, remote, authenticated); done {
		return d
	}
	cur, ok := m.current[remote.RID]
	switch {
	case !ok || cur.id == p.ID:
		return Decision{Verdict: Accept}
	case cur.gen != remote.Generation:
		return Decision{Verdict: Defer, Reason: OldGenerationAlive, Close: p.ID}
	case Arbiter(m.local.RID, remote.RID):
		return Decision{Verdict: Duplicate, Reason: DuplicatePipe, Close: p.ID}
	default:
		return Decision{Verdict: Accept}
	}
}

// Admit decides, at the moment pipe p would become ready, whether it becomes
// the current connection to the remote, and installs it if so. On the
// arbiter it is called when the arbiter declares p ready; on the follower,
// when the arbiter's ready signal arrives on p.
//
// The rules of Check apply first. Then: a different generation while the
// old one is current is deferred; a second pipe to the current lifecycle is
// refused on the arbiter (Duplicate: the incumbent, already ready, stays) and
// replaces the incumbent on the follower (Replace: the arbiter declared this
// pipe ready, so it no longer holds the old one). A ready pipe is never
// replaced on the arbiter.
func (m *Machine) Admit(p Pipe, remote Identity, authenticated bool) Decision {
	if d, done := m.rules(p, remote, authenticated); done {
		return d
	}
	cur, ok := m.current[remote.RID]
	switch {
	case !ok:
		m.install(remote.RID, p, remote.Generation)
		return Decision{Verdict: Accept}
	case cur.id == p.ID:
		if cur.gen == remote.Generation {
			return Decision{Verdict: Accept} // the same pipe admitted again
		}
		// A pipe cannot change lifecycle: the peer is broken.
		m.drop(remote.RID)
		return Decision{Verdict: Reject, Reason: StaleGeneration, Close: p.ID}
	case cur.gen != remote.Generation:
		return Decision{Verdict: Defer, Reason: OldGenerationAlive, Close: p.ID}
	case Arbiter(m.local.RID, remote.RID):
		return Decision{Verdict: Duplicate, Reason: DuplicatePipe, Close: p.ID}
	default:
		m.drop(remote.RID)
		m.install(remote.RID, p, remote.Generation)
		return Decision{Verdict: Replace, Reason: DuplicatePipe, Close: cur.id}
	}
}

// rules applies the checks that do not depend on the current pipe; done is
// false when all of them passed.
func (m *Machine) rules(p Pipe, remote Identity, authenticated bool) (d Decision, done bool) {
	reject := func(r Reason) (Decision, bool) { return Decision{Verdict: Reject, Reason: r, Close: p.ID}, true }
	if remote.Mesh != m.local.Mesh {
		return reject(WrongMesh)
	}
	if !authenticated || remote.SecurityIdentity == "" ||
		remote.SecurityIdentity != m.local.SecurityIdentity ||
		(p.Intent != nil && p.Intent.ExpectSecurity != "" && p.Intent.ExpectSecurity != remote.SecurityIdentity) {
		return reject(AuthFailed)
	}
	if remote.Protocol != m.local.Protocol {
		return reject(Version)
	}
	for _, c := range m.requiredCaps {
		if !slices.Contains(remote.Capabilities, c) {
			return reject(Capability)
		}
	}
	if p.Intent != nil && p.Intent.ExpectRID != "" && p.Intent.ExpectRID != remote.RID {
		return reject(WrongRID)
	}
	if remote.Generation == 0 ||
		(p.Intent != nil && p.Intent.ExpectGeneration != 0 && p.Intent.ExpectGeneration != remote.Generation) {
		return reject(StaleGeneration)
	}
	if remote.RID == m.local.RID {
		return reject(RIDCollision)
	}
	if p.Outbound && !m.intentLive(p.Intent) {
		return reject(NoIntent)
	}
	if !NeedsConnection(m.local, remote) {
		if p.Intent != nil {
			m.notRequired[keyOf(*p.Intent)] = struct{}{}
		}
		return Decision{Verdict: NotRequired, Reason: NotRequiredPair, Close: p.ID}, true
	}
	return Decision{}, false
}

// intentLive reports whether an outbound pipe's intent still wants a
// connection: it exists and no newer configuration generation has been seen
// for its endpoint.
func (m *Machine) intentLive(in *Intent) bool {
	if in == nil {
		return false
	}
	m.noteConfig(*in)
	return in.ConfigGeneration >= m.configGen[in.Endpoint]
}

func (m *Machine) noteConfig(in Intent) {
	if in.ConfigGeneration > m.configGen[in.Endpoint] {
		m.configGen[in.Endpoint] = in.ConfigGeneration
	}
}

func (m *Machine) install(rid string, p Pipe, gen uint64) {
	m.current[rid] = currentPipe{id: p.ID, gen: gen, outbound: p.Outbound}
	m.byPipe[p.ID] = rid
}

func (m *Machine) drop(rid string) {
	if cur, ok := m.current[rid]; ok {
		delete(m.byPipe, cur.id)
		delete(m.current, rid)
	}
}

// PipeClosed reports that a pipe ended (socket closed, goodbye). If it was a
// current pipe, its peer has no ready connection any more. Closing a pipe
// that is not current changes nothing.
func (m *Machine) PipeClosed(pipeID string) {
	if rid, ok := m.byPipe[pipeID]; ok {
		m.drop(rid)
	}
}

// PeerLost reports that liveness confirmed the lifecycle gen of peer rid is
// gone. If that lifecycle holds the current pipe, the pipe stops being
// current (the driver closes it) and a new generation may be admitted. A
// report about any other generation is a late event and changes nothing.
func (m *Machine) PeerLost(rid string, gen uint64) {
	if cur, ok := m.current[rid]; ok && cur.gen == gen {
		m.drop(rid)
	}
}

// Current returns the current pipe to peer rid and its generation.
func (m *Machine) Current(rid string) (pipeID string, gen uint64, ok bool) {
	cur, ok := m.current[rid]
	return cur.id, cur.gen, ok
}

// IsCurrent reports whether frames from pipeID may change state. Frames from
// any other pipe (a losing duplicate, an old generation, a closed pipe) must
// be ignored.
func (m *Machine) IsCurrent(pipeID string) bool {
	_, ok := m.byPipe[pipeID]
	return ok
}

// ShouldDial reports whether the driver should dial intent in. It is false
// for an intent that already ended NotRequired with the same Endpoint,
// ExpectRID and ConfigGeneration, and for an intent superseded by a larger
// ConfigGeneration already seen for its endpoint. A changed endpoint,
// expected RID or configuration generation is checked once more.
func (m *Machine) ShouldDial(in Intent) bool {
	if _, done := m.notRequired[keyOf(in)]; done {
		return false
	}
	m.noteConfig(in)
	return in.ConfigGeneration >= m.configGen[in.Endpoint]
}
