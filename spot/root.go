package spot

import (
	"errors"
	"slices"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// The actor tree under the mesh actor:
//
//	spots                the root: spawns the rest, runs the clock
//	spots/lease          creates and renews the ownership lease
//	spots/members        the mesh's Object Servers for placement (from the node's mesh view)
//	spots/reminders      reads the reminder index parts this node is in charge of (kinds with OnReminder)
//	spots/<kind>         one per kind: activations, claims, idle sweep
//	spots/<kind>/<id>    one per active Spot
//
// Restart is rebuild: the lease box, directories and counters live on the
// runtime, so a restarted actor picks up where the old one was.

type tick struct{ at time.Time }

// kindMailbox and kindMailboxBytes bound a kind actor's mailbox for the
// calls waiting for an activation (a full one is ErrBusy to the caller,
// nothing ran). Its control messages — claim and release results, ticks,
// moves, fencing, deactivations — go through TellControl and are never
// refused for want of budget: each answers one step the actor started.
const (
	kindMailbox      = 1 << 16
	kindMailboxBytes = 64 << 20
)

// The lease, members and rebalance actors receive their own ticks and the
// results of the store steps they started (one at a time), and "list
// again" requests: their budgets are that bound. The spots supervisor
// receives lifecycle messages and its children's spawn requests.
const ownMailbox = 1024

func (rt *runtime) rootSpec() actors.Spec {
	return actors.Spec{Name: "spots", Kind: "supervisor", MaxMessages: ownMailbox, Supervisor: supervisor.DefaultConfig(),
		Producer: func() actors.Actor { return &rootActor{rt: rt} }}
}

// rootActor spawns the lease, members and kind actors and drives them
// with one clock (a single ticker for the node, not a timer per Spot).
type rootActor struct {
	rt   *runtime
	stop chan struct{}
}

func (a *rootActor) Receive(c *actors.Context) {
	rt := a.rt
	switch c.Message().(type) {
	case *actors.Started:
		self := c.Self()
		rt.root.Store(self)
		spawn := func(spec actors.Spec) *actors.Ref {
			ref, err := c.Spawn(spec)
			if err != nil {
				panic(err)
			}
			return ref
		}
		var targets []*actors.Ref
		if rt.role == routemesh.ObjectServer {
			targets = append(targets, spawn(actors.Spec{Name: "lease", Kind: "lease", MaxMessages: ownMailbox, Producer: func() actors.Actor { return &leaseActor{rt: rt} }}))
		}
		if rt.role == routemesh.ObjectServer && rt.cfg.Rebalance > 0 {
			targets = append(targets, spawn(actors.Spec{Name: "rebalance", Kind: "rebalance", MaxMessages: ownMailbox,
				Producer: func() actors.Actor { return &rebalanceActor{rt: rt} }}))
		}
		if rt.role == routemesh.ObjectServer && rt.remindedKinds() {
			spawn(rt.reminderSpec()) // ticks itself
		}
		if rt.role != routemesh.ObjectNone {
			targets = append(targets, spawn(actors.Spec{Name: "members", Kind: "members", MaxMessages: ownMailbox, Producer: func() actors.Actor { return &membersActor{rt: rt} }}))
		}
		for _, ks := range rt.order {
			targets = append(targets, spawn(actors.Spec{Name: ks.reg.name, Kind: "spot-kind", MaxMessages: kindMailbox, MaxBytes: kindMailboxBytes, Supervisor: supervisor.DefaultConfig(),
				Producer: func() actors.Actor {
					return &kindActor{rt: rt, ks: ks, table: map[string]*entry{}, inflight: map[string]int{}}
				}, Fold: true, Pooled: true}))
		}
		a.stop = make(chan struct{})
		every := min(rt.cfg.RenewEvery/2, 250*time.Millisecond)
		go clock(a.stop, every, targets)
	case *actors.Stopping, *actors.Restarting:
		if a.stop != nil {
			close(a.stop)
			a.stop = nil
		}
	}
}

// clock ticks every target until stop closes.
func clock(stop chan struct{}, every time.Duration, targets []*actors.Ref) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for _, ref := range targets {
				_ = ref.TellControl(&tick{at: now})
			}
		}
	}
}

// leaseActor keeps the ownership lease (R1): created once per generation,
// then only renewed; a refused renewal, or a deadline passing first,
// fences every Spot and starts a new generation.
type leaseActor struct {
	rt       *runtime
	inflight bool
	renewed  time.Time // the clock tick that sent the last renewal
}

type leaseDone struct {
	gen, tok uint64
	create   bool
	err      error
}

func (a *leaseActor) Receive(c *actors.Context) {
	rt := a.rt
	switch msg := c.Message().(type) {
	case *actors.Started:
		a.inflight, a.renewed = false, time.Time{}
		if gen, _ := rt.lease.holder(time.Now()); gen == 0 {
			a.begin(c, rt.n.Generation())
		}
	case *tick:
		if rt.stopping.Load() {
			return
		}
		a.probe(c, msg.at)
		gen, _ := rt.lease.holder(msg.at)
		if rt.lease.expired(gen, msg.at) {
			// Even while a renewal hangs: the deadline decides, not the store.
			rt.log.Warn().Uint64("generation", gen).Msg("spots: ownership lease deadline passed; fencing every Spot and starting a new generation")
			a.inflight = false // the old generation's answer will be ignored
			a.newGeneration(c, gen)
			return
		}
		// A renewal every RenewEvery (the clock ticks faster): the first
		// tick at least RenewEvery less half a tick after the last one.
		half := min(rt.cfg.RenewEvery/2, 250*time.Millisecond) / 2
		if a.inflight || (!a.renewed.IsZero() && msg.at.Sub(a.renewed) < rt.cfg.RenewEvery-half) {
			return
		}
		a.renewed = msg.at
		a.write(c, gen, false)
	case *probeDone:
		if rt.incs.answered(msg.s, msg.tok, msg.inc, msg.err) {
			rt.stats.incarnations.Add(1)
			rt.log.Error().Str("was", msg.s.inc).Str("now", msg.inc).
				Msg("spots: a store shard changed incarnation (failover or empty restart): writes it acknowledged may be lost; fencing the Spots claimed there")
			a.fenceInc(msg.s)
		}
	case *leaseDone:
		if gen, _ := rt.lease.holder(time.Now()); msg.gen != gen {
			return // a generation already given up: its answer changes nothing
		}
		a.inflight = false
		switch {
		case msg.err == nil:
			rt.lease.acked(msg.gen, msg.tok)
		case errors.Is(msg.err, location.ErrNotFound) || errors.Is(msg.err, location.ErrFenced) || errors.Is(msg.err, location.ErrExists):
			rt.log.Warn().Err(msg.err).Uint64("generation", msg.gen).Msg("spots: ownership lease refused; fencing every Spot and starting a new generation")
			rt.lease.refuse(msg.gen)
			a.newGeneration(c, msg.gen)
		default: // unknown outcome (store down, unconfirmed): not counted
			rt.lease.lost(msg.gen, msg.tok)
			a.renewed = time.Time{} // try again on the next tick
			if msg.create {
				a.write(c, msg.gen, true)
			}
		}
	}
}

type probeDone struct {
	s   *incState
	tok uint64
	inc string
	err error
}

// probe confirms every store shard incarnation holding claims of active
// Spots (rule C), once per renewal period each, and fences the Spots of
// one whose confirmation lapsed.
func (a *leaseActor) probe(c *actors.Context, now time.Time) {
	rt := a.rt
	probes, lapsed := rt.incs.due(now, rt.cfg.RenewEvery)
	for _, s := range lapsed {
		rt.log.Warn().Str("incarnation", s.inc).Msg("spots: a store shard's incarnation went unconfirmed past the deadline; fencing the Spots claimed there")
		a.fenceInc(s)
	}
	self := c.Self()
	for _, s := range probes {
		tok := rt.incs.sent(s, now)
		if !rt.goStore(func() {
			ctx, cancel := rt.storeCtx()
			defer cancel()
			inc, err := rt.dir.SpotIncarnation(ctx, rt.n.Mesh(), s.kind, s.id)
			_ = self.TellControl(&probeDone{s: s, tok: tok, inc: inc, err: err})
		}) {
			rt.incs.answered(s, tok, "", errStopping)
		}
	}
}

func (a *leaseActor) fenceInc(s *incState) {
	for _, ks := range a.rt.order {
		if ref := ks.ref.Load(); ref != nil {
			_ = ref.TellControl(&fenceInc{s: s})
		}
	}
}

var errStopping = errors.New("spots stopping")

func (a *leaseActor) begin(c *actors.Context, gen uint64) {
	a.rt.lease.begin(gen)
	a.rt.stats.leaseGens.Add(1)
	a.write(c, gen, true)
}

// newGeneration fences every activation of gen and starts a new lease.
func (a *leaseActor) newGeneration(c *actors.Context, old uint64) {
	a.rt.lease.refuse(old)
	for _, ks := range a.rt.order {
		if ref := ks.ref.Load(); ref != nil {
			_ = ref.TellControl(&fenceAll{gen: old})
		}
	}
	a.begin(c, ident.Generation())
}

// write sends a create or renewal; the answer comes back as leaseDone.
func (a *leaseActor) write(c *actors.Context, gen uint64, create bool) {
	rt := a.rt
	tok, ok := rt.lease.sent(gen, time.Now())
	if !ok {
		return
	}
	self := c.Self()
	a.inflight = rt.goStore(func() {
		ctx, cancel := rt.storeCtx()
		defer cancel()
		l := location.SpotLease{Mesh: rt.n.Mesh(), RID: rt.n.RID(), Generation: gen}
		var err error
		if create {
			err = rt.dir.CreateSpotLease(ctx, l, rt.cfg.LeaseTTL)
		} else {
			err = rt.dir.RenewSpotLease(ctx, l, rt.cfg.LeaseTTL)
		}
		_ = self.TellControl(&leaseDone{gen: gen, tok: tok, create: create, err: err})
	})
}

// membersActor keeps the mesh's Object Servers for placement, each with
// the kinds it hosts, from the node's view of the mesh (routemesh
// MeshView, kept by discovery): it reads no store itself. On every tick it
// takes a view that changed; a refresh asks discovery for a read of the
// store that starts now and takes the view once it has finished, off its
// turn.
type membersActor struct {
	rt       *runtime
	inflight bool
	again    bool                  // a refresh was asked for while one ran: start another after it
	rounds   uint64                // MeshView.Rounds of the view last taken
	rev      location.MeshRevision // and its revision
}

// refreshMembers asks for a listing that starts now or, while one runs,
// right after it (placement found nobody, or a server answered "kind not
// hosted").
type refreshMembers struct{}

type membersListed struct {
	view *routemesh.MeshView
}

func (a *membersActor) Receive(c *actors.Context) {
	rt := a.rt
	switch c.Message().(type) {
	case *actors.Started:
		a.inflight, a.again, a.rounds, a.rev = false, false, 0, location.MeshRevision{}
		rt.membRef.Store(c.Self())
		a.refresh(c)
	case *tick:
		if v := rt.n.MeshView(); !a.inflight && v.Rounds > a.rounds && (a.rounds == 0 || v.Revision != a.rev) {
			rt.listing.Add(1)
			a.take(v)
		}
	case *membersListed:
		a.inflight = false
		a.take(c.Message().(*membersListed).view)
		if a.again {
			a.again = false
			a.refresh(c)
		}
	case *refreshMembers:
		if a.inflight {
			a.again = true // what runs may have read the store before the ask
			return
		}
		a.refresh(c)
	}
}

// take builds the members from view (unless it is older than the last
// one taken) and counts a listing ended.
func (a *membersActor) take(v *routemesh.MeshView) {
	rt := a.rt
	if v != nil && v.Rounds >= a.rounds {
		a.rounds, a.rev = v.Rounds, v.Revision
		out := make([]member, 0, len(v.Descriptors))
		for _, d := range v.Descriptors {
			// nil: the descriptor does not list its kinds (every kind). The
			// stores list them sorted; another Store may not.
			kinds := d.Kinds
			if !slices.IsSorted(kinds) {
				kinds = slices.Sorted(slices.Values(kinds))
			}
			out = append(out, member{rid: d.RID, weight: d.PlacementWeight, server: d.ObjectRole == location.RoleServer,
				draining: d.Draining, kinds: kinds})
		}
		rt.members.Store(&out)
	}
	rt.listed.Add(1)
}

// refresh asks discovery for a fresh read and waits for it off the turn
// (at most a store call's deadline); the view comes back as membersListed
// (the current one if the wait ended first).
func (a *membersActor) refresh(c *actors.Context) {
	rt := a.rt
	self := c.Self()
	ticket := rt.n.RefreshMeshView()
	a.inflight = rt.goStore(func() {
		ctx, cancel := rt.storeCtx()
		defer cancel()
		v, err := rt.n.WaitMeshView(ctx, ticket)
		if err != nil {
			v = nil // no fresh read: keep the members as they are
		}
		_ = self.Tell(&membersListed{view: v})
	})
	if a.inflight {
		rt.listing.Add(1)
	}
}
