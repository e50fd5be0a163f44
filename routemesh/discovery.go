package routemesh

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/location"
)

// errIntentRemoved closes a handshake whose intent discovery withdrew.
var errIntentRemoved = errors.New("zlink: connection intent withdrawn by discovery")

// Messages of the discovery actor.
type (
	discRound  struct{}
	discListed struct {
		descs []location.Descriptor
		err   error
	}
	// discApplied acknowledges step seq (sent by the mesh actor).
	discApplied struct{ seq uint64 }
)

// Messages from the discovery actor to the mesh actor.
type (
	// discChange is one automatic topology change; acknowledged to ack
	// once applied (a Request without ack gets a reply instead).
	discChange struct {
		c   change
		ack *actors.Ref
		seq uint64
	}
	// discWeights carries descriptors whose weights the mesh actor applies
	// to ready links of the same generation (a lost push converges here).
	discWeights struct{ descs []location.Descriptor }
	// manualMatch tells which descriptor (nil = none) matches a manual
	// endpoint; acknowledged like discChange.
	manualMatch struct {
		endpoint string
		d        *location.Descriptor
		ack      *actors.Ref
		seq      uint64
	}
)

// discoveryActor is the reconfiguration actor of one MeshNode: it learns
// descriptors from the Location Store (Watch hints plus a re-list every
// DiscoveryPoll), computes what the mesh should look like and hands the
// mesh actor one change at a time, sending the next only when the mesh
// actor has acknowledged the last. It is the only reader of the store for
// topology; it never touches pipes. It never blocks: the listing runs on a
// goroutine of its incarnation and comes back as a message.
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

	busy  bool       // a round is listing or applying
	again bool       // a round was asked for while busy
	steps []discStep // what the current round still has to hand over
	seq   uint64     // the step awaiting its acknowledgement

	applied map[string]want                 // automatic: what the mesh actor holds
	manual  map[string]*location.Descriptor // manual endpoint → last match sent
	sent    map[string]bool                 // manual endpoint → a match was sent
}

// discStep is one change (automatic) or one endpoint match (manual).
type discStep struct {
	change   *change
	want     want
	endpoint string
	match    *location.Descriptor
}

func newDiscoveryActor(n *Node, store location.Store) *discoveryActor {
	return &discoveryActor{n: n, store: store, pending: new(atomic.Bool),
		applied: map[string]want{}, manual: map[string]*location.Descriptor{}, sent: map[string]bool{}}
}

func (a *discoveryActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
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
			a.cancel() // ends this incarnation's watch and listing
		}
	case *discRound:
		a.pending.Store(false)
		a.round()
	case *discListed:
		a.listed(msg)
	case *discApplied:
		if a.busy && msg.seq == a.seq && len(a.steps) > 0 {
			a.record(a.steps[0])
			a.steps = a.steps[1:]
			a.next()
		}
	}
}

// poke queues one round unless one is queued already (hints coalesce).
func (a *discoveryActor) poke() {
	if a.pending.CompareAndSwap(false, true) {
		if a.self.TellControl(&discRound{}) != nil {
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

// round starts a re-list of the mesh's descriptors (one at a time).
func (a *discoveryActor) round() {
	if a.ctx.Err() != nil {
		return
	}
	if a.busy {
		a.again = true
		return
	}
	a.busy = true
	ctx, self, store, n := a.ctx, a.self, a.store, a.n
	ok := n.goTracked(func() {
		lctx, cancel := context.WithTimeout(ctx, max(n.cfg.DiscoveryPoll, time.Second))
		defer cancel()
		descs, err := store.ListDescriptors(lctx, n.cfg.Mesh)
		_ = self.TellControl(&discListed{descs: descs, err: err})
	})
	if !ok {
		a.busy = false
	}
}

// listed turns a listing into the round's steps and starts handing them
// over.
func (a *discoveryActor) listed(msg *discListed) {
	n := a.n
	if msg.err != nil {
		// Store unreachable: new discovery pauses, existing connections
		// stay; the next tick tries again.
		n.cnt.discoveryErrors.Add(1)
		a.done()
		return
	}
	n.cnt.discoveryRounds.Add(1)
	if n.cfg.Automatic() {
		a.steps = a.automatic(msg.descs)
	} else {
		a.steps = a.manualEndpoints(msg.descs)
	}
	if len(msg.descs) > 0 {
		_ = n.mesh().TellControl(&discWeights{descs: msg.descs})
	}
	a.next()
}

// next hands the mesh actor the next step, or ends the round.
func (a *discoveryActor) next() {
	if len(a.steps) == 0 || a.ctx.Err() != nil {
		a.done()
		return
	}
	a.seq++
	st := a.steps[0]
	var err error
	if st.change != nil {
		err = a.n.mesh().TellControl(&discChange{c: *st.change, ack: a.self, seq: a.seq})
	} else {
		err = a.n.mesh().TellControl(&manualMatch{endpoint: st.endpoint, d: st.match, ack: a.self, seq: a.seq})
	}
	if err != nil {
		a.done() // stopping, or the mesh actor is full: the next round redoes the rest
	}
}

func (a *discoveryActor) done() {
	a.busy, a.steps = false, nil
	if a.again {
		a.again = false
		a.poke()
	}
}

// record notes what the mesh actor now holds after step st.
func (a *discoveryActor) record(st discStep) {
	if st.change == nil {
		a.manual[st.endpoint], a.sent[st.endpoint] = st.match, true
		return
	}
	if st.change.kind == wantRemove {
		delete(a.applied, st.change.d.RID)
	} else {
		a.applied[st.change.d.RID] = st.want
	}
}

func (a *discoveryActor) automatic(descs []location.Descriptor) []discStep {
	n := a.n
	local := descIdentity(&location.Descriptor{Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen,
		ObjectRole: locationRole(n.cfg.ObjectRole), Servers: n.servers()})
	wanted := planDiscovery(local, descs)
	byRID := make(map[string]location.Descriptor, len(descs))
	for _, d := range descs {
		byRID[d.RID] = d
	}
	var steps []discStep
	for _, c := range diffDiscovery(a.applied, wanted, byRID) {
		c := c
		steps = append(steps, discStep{change: &c, want: wanted[c.d.RID]})
	}
	return steps
}

// manualEndpoints matches each manual endpoint with the one descriptor that
// has the same endpoint (and the expected RID, when set). Several matches
// (a stale lifecycle next to a new one) count as none until the stale one
// expires: an ambiguous endpoint claims no placement.
func (a *discoveryActor) manualEndpoints(descs []location.Descriptor) []discStep {
	n := a.n
	var steps []discStep
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
		steps = append(steps, discStep{endpoint: pc.Endpoint, match: match})
	}
	return steps
}

func sameTarget(x, y *location.Descriptor) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.RID == y.RID && x.Generation == y.Generation && x.SecurityIdentity == y.SecurityIdentity
}

// ack tells the discovery actor that step seq was applied (or answers a
// plain Request).
func ackDisc(c actor.Context, ack *actors.Ref, seq uint64) {
	if ack != nil {
		_ = ack.TellControl(&discApplied{seq: seq})
		return
	}
	c.Respond(true)
}

// discoverySpec is the discovery actor, a child of the mesh actor.
func (n *Node) discoverySpec() actors.Spec {
	return actors.Spec{
		Name: "discovery", Kind: "discovery", MaxMessages: discoveryMailbox,
		Producer: func() actor.Actor { return newDiscoveryActor(n, n.store) },
	}
}
