package routemesh

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

// errIntentRemoved closes a handshake whose intent discovery withdrew.
var errIntentRemoved = errors.New("zlink: connection intent withdrawn by discovery")

// Messages of the discovery actor.
type (
	discRound struct{}
)

// Messages from the discovery actor to the mesh actor.
type (
	// discChange is one automatic topology change; answered once applied.
	discChange struct{ c change }
	// discWeights carries descriptors whose weights the mesh actor applies
	// to ready links of the same generation (a lost push converges here).
	discWeights struct{ descs []location.Descriptor }
	// manualMatch tells which descriptor (nil = none) matches a manual
	// endpoint; answered once recorded.
	manualMatch struct {
		endpoint string
		d        *location.Descriptor
	}
)

// discoveryActor is the reconfiguration actor of one MeshNode:
// it learns descriptors from the Location Store (Watch hints plus a re-list
// every DiscoveryPoll), computes what the mesh should look like and hands
// the mesh actor one change at a time, waiting for each to be applied. It
// is the only reader of the store for topology; it never touches pipes.
//
// Automatic nodes get dial/await/excluded/remove changes. A manual node
// with an object role uses it to match its manual endpoints with
// descriptors (descriptor-based manual endpoints).
type discoveryActor struct {
	n       *Node
	store   location.Store
	ctx     context.Context // this incarnation's: cancelled when it ends
	cancel  context.CancelFunc
	self    *actors.Ref
	pending *atomic.Bool // a round is queued

	applied map[string]want                 // automatic: what the mesh actor holds
	manual  map[string]*location.Descriptor // manual endpoint → last match sent
	sent    map[string]bool                 // manual endpoint → a match was sent
}

func newDiscoveryActor(n *Node, store location.Store) *discoveryActor {
	return &discoveryActor{n: n, store: store, pending: new(atomic.Bool),
		applied: map[string]want{}, manual: map[string]*location.Descriptor{}, sent: map[string]bool{}}
}

func (a *discoveryActor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		// Every incarnation starts from nothing: it re-lists the store and
		// hands the mesh actor what it should hold (a restarted mesh actor
		// holds nothing; one that kept running ignores repeats).
		a.self = a.n.sys.Self(c)
		a.ctx, a.cancel = context.WithCancel(a.n.dctx)
		if !a.n.goTracked(a.watch) {
			a.cancel()
			return
		}
		a.poke()
	case *actor.Restarting, *actor.Stopping:
		if a.cancel != nil {
			a.cancel() // ends this incarnation's watch and store calls
		}
	case *discRound:
		if a.ctx.Err() == nil {
			a.pending.Store(false)
			a.round()
		}
	}
}

// poke queues one round unless one is queued already (hints coalesce).
func (a *discoveryActor) poke() {
	if a.pending.CompareAndSwap(false, true) {
		if a.self.Tell(&discRound{}) != nil {
			a.pending.Store(false)
		}
	}
}

// watch turns store hints and the poll ticker into rounds until the node
// stops. A Watch that fails (store unreachable) or ends is re-opened on
// the next tick; polling alone keeps discovery going meanwhile.
func (a *discoveryActor) watch() {
	tick := time.NewTicker(a.n.cfg.DiscoveryPoll)
	defer tick.Stop()
	var events <-chan location.Event
	for {
		if events == nil {
			if ch, err := a.store.Watch(a.ctx, a.n.cfg.Mesh); err == nil {
				events = ch
			}
		}
		select {
		case <-a.ctx.Done():
			return
		case <-tick.C:
			a.poke()
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			a.poke()
		}
	}
}

// round re-lists the mesh's descriptors and applies what changed.
func (a *discoveryActor) round() {
	n := a.n
	ctx, cancel := context.WithTimeout(a.ctx, max(n.cfg.DiscoveryPoll, time.Second))
	defer cancel()
	descs, err := a.store.ListDescriptors(ctx, n.cfg.Mesh)
	if err != nil {
		// Store unreachable: new discovery pauses, existing connections
		// stay; the next tick tries again.
		n.cnt.discoveryErrors.Add(1)
		return
	}
	n.cnt.discoveryRounds.Add(1)
	if n.cfg.Automatic() {
		a.automatic(ctx, descs)
	} else {
		a.manualEndpoints(ctx, descs)
	}
	if len(descs) > 0 {
		_ = n.mesh().Tell(&discWeights{descs: descs})
	}
}

func (a *discoveryActor) automatic(ctx context.Context, descs []location.Descriptor) {
	n := a.n
	local := descIdentity(&location.Descriptor{Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen,
		ObjectRole: locationRole(n.cfg.ObjectRole), Servers: n.servers()})
	wanted := planDiscovery(local, descs)
	byRID := make(map[string]location.Descriptor, len(descs))
	for _, d := range descs {
		byRID[d.RID] = d
	}
	for _, c := range diffDiscovery(a.applied, wanted, byRID) {
		// One change at a time: the mesh actor answers once applied.
		if _, err := n.mesh().Request(ctx, &discChange{c: c}); err != nil {
			return // stopping, or the mesh actor is slow: the next round redoes the rest
		}
		if c.kind == wantRemove {
			delete(a.applied, c.d.RID)
		} else {
			a.applied[c.d.RID] = wanted[c.d.RID]
		}
	}
}

// manualEndpoints matches each manual endpoint with the one descriptor that
// has the same endpoint (and the expected RID, when set). Several matches
// (a stale lifecycle next to a new one) count as none until the stale one
// expires: an ambiguous endpoint claims no placement.
func (a *discoveryActor) manualEndpoints(ctx context.Context, descs []location.Descriptor) {
	n := a.n
	for _, pc := range n.cfg.Peers {
		var match *location.Descriptor
		count := 0
		for i := range descs {
			d := &descs[i]
			if d.Endpoint != pc.Endpoint || d.RID == n.rid || d.Generation == 0 ||
				(pc.ExpectRID != "" && d.RID != pc.ExpectRID) {
				continue
			}
			count++
			dc := d.Clone()
			match = &dc
		}
		if count != 1 {
			match = nil
		}
		if a.sent[pc.Endpoint] && sameTarget(a.manual[pc.Endpoint], match) {
			continue
		}
		if _, err := n.mesh().Request(ctx, &manualMatch{endpoint: pc.Endpoint, d: match}); err != nil {
			return
		}
		a.manual[pc.Endpoint], a.sent[pc.Endpoint] = match, true
	}
}

func sameTarget(x, y *location.Descriptor) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.RID == y.RID && x.Generation == y.Generation && x.SecurityIdentity == y.SecurityIdentity
}

// ---- mesh actor side -----------------------------------------------------

// autoPeer is an automatic peer this node does not dial: it waits for the
// smaller RID to dial (wantAwait), or the pair needs no connection
// (wantExcluded).
type autoPeer struct {
	kind     wantKind
	endpoint string
	since    time.Time // installed, or its last connection lost
}

// applyChange carries out one discovery change.
func (m *meshActor) applyChange(c change) {
	if m.stopped {
		return
	}
	rid := c.d.RID
	m.removeAuto(rid)
	d := c.d
	switch c.kind {
	case wantDial:
		in := &intent{
			cfg: PeerConfig{Endpoint: d.Endpoint, ExpectRID: rid},
			adm: admission.Intent{Endpoint: d.Endpoint, ExpectRID: rid, ExpectGeneration: d.Generation,
				ExpectSecurity: d.SecurityIdentity, ConfigGeneration: m.n.cfg.ConfigGeneration},
			state: PeerConnecting, since: time.Now(), rid: rid, auto: true, desc: true,
		}
		m.intents = append(m.intents, in)
		m.dial(in)
	case wantAwait, wantExcluded:
		m.auto[rid] = &autoPeer{kind: c.kind, endpoint: d.Endpoint, since: time.Now()}
	}
	m.n.log.Debug().Str("peer", rid).Stringer("change", c.kind).Uint64("peer_generation", d.Generation).Msg("discovery change")
}

// removeAuto withdraws what discovery installed for rid. A handshake in
// progress for the withdrawn intent is closed; a ready connection stays
// (liveness, not the descriptor's TTL, decides that the peer is gone).
func (m *meshActor) removeAuto(rid string) {
	delete(m.auto, rid)
	kept := m.intents[:0]
	var drop []*pipe
	for _, in := range m.intents {
		if !in.auto || in.rid != rid {
			kept = append(kept, in)
			continue
		}
		in.removed = true
		if in.p != nil && in.p.getState() != pipeReady {
			drop = append(drop, in.p)
		}
	}
	for i := len(kept); i < len(m.intents); i++ {
		m.intents[i] = nil
	}
	m.intents = kept
	for _, p := range drop {
		m.dropPipe(p, errIntentRemoved)
	}
}

// applyDescWeights applies a descriptor's larger revision to a ready link
// of the same generation: a weight push that was lost converges here.
func (m *meshActor) applyDescWeights(descs []location.Descriptor) {
	links := m.n.load().links
	for i := range descs {
		d := &descs[i]
		if l := links[d.RID]; l != nil && l.gen == d.Generation && l.p != nil {
			m.applyMember(l.p, d.Generation, d.Revision, d.Servers)
		}
	}
}

// matchManual records the descriptor matching a manual endpoint and
// upgrades its intent when that is allowed.
func (m *meshActor) matchManual(msg *manualMatch) {
	for _, in := range m.intents {
		if in.auto || in.cfg.Endpoint != msg.endpoint {
			continue
		}
		in.pending, in.pendingSet = msg.d, true
		m.tryUpgrade(in)
	}
}

// tryUpgrade replaces a manual intent's expected values with its matched
// descriptor (RID, positive generation, security identity), or back to
// endpoint-only when the descriptor is gone. Never while the intent has a
// pipe (handshake or ready) or is satisfied by a ready link: a healthy
// connection is not torn down for this, and the old intent must have been
// closed by liveness first. A NotRequired intent stays as it is.
func (m *meshActor) tryUpgrade(in *intent) {
	if !in.pendingSet || in.auto || in.state == PeerNotRequired || in.p != nil {
		return
	}
	if in.rid != "" && m.n.load().links[in.rid] != nil {
		return
	}
	d := in.pending
	in.pending, in.pendingSet = nil, false
	adm := admission.Intent{Endpoint: in.cfg.Endpoint, ExpectRID: in.cfg.ExpectRID, ConfigGeneration: in.adm.ConfigGeneration}
	if d != nil {
		adm.ExpectRID, adm.ExpectGeneration, adm.ExpectSecurity = d.RID, d.Generation, d.SecurityIdentity
	}
	if adm == in.adm {
		return
	}
	in.adm, in.desc = adm, d != nil
	if d != nil {
		in.rid = d.RID
	}
	m.n.log.Info().Str("endpoint", in.cfg.Endpoint).Str("peer", adm.ExpectRID).Bool("descriptor", in.desc).Msg("manual intent replaced")
}

// descBacked reports whether discovery backs peer rid with a descriptor.
func (m *meshActor) descBacked(rid string) bool {
	if _, ok := m.auto[rid]; ok {
		return true
	}
	for _, in := range m.intents {
		if in.desc && in.rid == rid {
			return true
		}
	}
	return false
}

// discoverySpec is the discovery actor, a child of the mesh actor.
func (n *Node) discoverySpec() actors.Spec {
	return actors.Spec{
		Name: "discovery", Kind: "discovery", MaxMessages: 1024,
		Producer: func() actor.Actor { return newDiscoveryActor(n, n.store) },
	}
}
