package routemesh

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/location"
)

// errIntentRemoved closes a handshake whose intent discovery withdrew.
var errIntentRemoved = errors.New("zlink: connection intent withdrawn by discovery")

// Messages of the discovery actor.
type (
	discRound struct{}
	// discListed is a round's read of the store: ch is nil when the mesh
	// revision had not moved.
	discListed struct {
		ch    *location.DescriptorChanges
		err   error
		asked uint64 // RefreshMeshView tickets handed out when the read started
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

// discoveryActor is the reconfiguration actor of one MeshNode and its one
// reader of the mesh's descriptors: it keeps the node's view of the mesh
// (MeshView) from the Location Store — a read of what changed on every
// Watch hint, and every DiscoveryPoll a read of the mesh revision (one
// small read) followed by a read of what changed only when it moved —
// computes what the mesh should look like and hands the mesh actor one
// change at a time, sending the next only when the mesh actor has
// acknowledged the last. It never touches pipes. It never blocks: the
// read runs on a goroutine of its incarnation and comes back as a
// message.
//
// Automatic nodes get dial/await/excluded/remove changes. A manual node
// with an object role uses it to match its manual endpoints with
// descriptors (descriptor-based manual endpoints), and for the view its
// extensions read.
type discoveryActor struct {
	n       *Node
	store   location.Descriptors
	ctx     context.Context // this incarnation's: cancelled when it ends
	cancel  context.CancelFunc
	self    *actors.Ref
	pending *atomic.Bool // a round is queued

	busy   bool       // a round is reading or applying
	again  bool       // a round was asked for while busy
	steps  []discStep // what the current round still has to hand over
	seq    uint64     // the step awaiting its acknowledgement
	replan bool       // a round ended before handing everything over: plan again

	rev  location.MeshRevision          // the view's revision (zero: read everything)
	view map[string]location.Descriptor // the live descriptors by RID

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

func newDiscoveryActor(n *Node, store location.Descriptors) *discoveryActor {
	return &discoveryActor{n: n, store: store, pending: new(atomic.Bool), view: map[string]location.Descriptor{},
		applied: map[string]want{}, manual: map[string]*location.Descriptor{}, sent: map[string]bool{}}
}

func (a *discoveryActor) Receive(c *actors.Context) {
	switch msg := c.Message().(type) {
	case *actors.Started:
		// Every incarnation starts from nothing: it reads the whole mesh
		// (the zero revision) and hands the mesh actor what it should hold
		// (a restarted mesh actor holds nothing; one that kept running
		// ignores repeats).
		a.self = c.Self()
		a.ctx, a.cancel = context.WithCancel(a.n.dctx)
		if !a.n.goTracked(a.watch) {
			a.cancel()
			return
		}
		poke := a.poke
		a.n.mview.poke.Store(&poke)
		a.poke()
	case *actors.Restarting, *actors.Stopping:
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
// stops: a hint asks for a read of what changed, a tick for a read of the
// revision. A Watch that fails (store unreachable) or ends is re-opened
// on the next tick; polling alone keeps discovery going meanwhile.
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
			a.n.mview.wantRead.Store(true)
			a.poke()
		}
	}
}

// round starts a read of the store (one at a time): of what changed when
// a hint or a refresh asked for it (or nothing was read yet), else of the
// mesh revision, then of what changed only if it moved.
func (a *discoveryActor) round() {
	if a.ctx.Err() != nil {
		return
	}
	if a.busy {
		a.again = true
		return
	}
	a.busy = true
	box := &a.n.mview
	read := box.wantRead.Swap(false) || a.rev.IsZero()
	asked := box.asks.Load()
	ctx, self, store, n, since := a.ctx, a.self, a.store, a.n, a.rev
	ok := n.goTracked(func() {
		lctx, cancel := context.WithTimeout(ctx, max(n.cfg.DiscoveryPoll, time.Second))
		defer cancel()
		msg := &discListed{asked: asked}
		if !read {
			var rev location.MeshRevision
			if rev, msg.err = store.DescriptorRevision(lctx, n.cfg.Mesh); msg.err != nil || rev == since {
				_ = self.TellControl(msg)
				return
			}
		}
		ch, err := store.DescriptorChanges(lctx, n.cfg.Mesh, since)
		msg.ch, msg.err = &ch, err
		_ = self.TellControl(msg)
	})
	if !ok {
		a.busy = false
		if read {
			box.wantRead.Store(true)
		}
	}
}

// listed brings the view to what the round read and, when it changed (or
// the last round did not hand everything over), turns it into the
// round's steps and starts handing them over.
func (a *discoveryActor) listed(msg *discListed) {
	n := a.n
	if msg.err != nil {
		// Store unreachable: new discovery pauses, existing connections
		// stay; the next tick tries again (a hint's read included).
		n.cnt.discoveryErrors.Add(1)
		if msg.ch != nil || a.rev.IsZero() {
			n.mview.wantRead.Store(true)
		}
		a.done()
		return
	}
	n.cnt.discoveryRounds.Add(1)
	changed := msg.ch != nil && a.apply(msg.ch)
	n.mview.publish(a.snapshot(msg.asked))
	if !changed && !a.replan {
		a.done()
		return
	}
	a.replan = false
	descs := a.descriptors()
	if n.cfg.Automatic() {
		a.steps = a.automatic(descs)
	} else {
		a.steps = a.manualEndpoints(descs)
	}
	if msg.ch != nil && len(msg.ch.Put) > 0 {
		_ = n.mesh().TellControl(&discWeights{descs: msg.ch.Put})
	}
	a.next()
}

// apply brings the view to ch and reports whether it changed.
func (a *discoveryActor) apply(ch *location.DescriptorChanges) bool {
	changed := ch.Full || len(ch.Put) > 0 || len(ch.Gone) > 0
	if ch.Full {
		clear(a.view)
	}
	for _, d := range ch.Put {
		if d.Mesh == a.n.cfg.Mesh {
			a.view[d.RID] = d
		}
	}
	for _, rid := range ch.Gone {
		delete(a.view, rid)
	}
	a.rev = ch.Revision
	return changed
}

// descriptors returns the view's descriptors sorted by RID.
func (a *discoveryActor) descriptors() []location.Descriptor {
	out := make([]location.Descriptor, 0, len(a.view))
	for _, d := range a.view {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y location.Descriptor) int { return strings.Compare(x.RID, y.RID) })
	return out
}

// snapshot is the view to publish after a round that started when asked
// tickets had been handed out. An unchanged view keeps its descriptors.
func (a *discoveryActor) snapshot(asked uint64) *MeshView {
	v := &MeshView{Revision: a.rev, Rounds: a.n.cnt.discoveryRounds.Load(), served: asked}
	if old := a.n.mview.load(); old.Revision == a.rev && old.Rounds > 0 && len(old.Descriptors) == len(a.view) {
		v.Descriptors = old.Descriptors
	} else {
		v.Descriptors = a.descriptors()
	}
	return v
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
	if len(a.steps) > 0 {
		a.replan = true // the rest is handed over after the next read
	}
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
func ackDisc(c *actors.Context, ack *actors.Ref, seq uint64) {
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
		Producer: func() actors.Actor { return newDiscoveryActor(n, n.store) },
	}
}
