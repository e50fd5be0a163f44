package spot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// extName is the name the runtime is attached under on a MeshNode.
const extName = "spot"

// MaxKinds bounds the kinds one Object Server hosts: its descriptor lists
// them (each name at most 128 bytes, see NewKind). More are refused at
// Start with ErrConfig.
const MaxKinds = 64

// Enable attaches the Spot runtime to a MeshNode being configured, with
// the kinds an Object Server hosts (an Object Client passes none). The
// node needs an object role and a Location Store. Settings take their
// defaults; EnableWith sets them. Object Servers of one mesh may host
// different kinds: each publishes its own in its descriptor, and a kind's
// Spots are placed only on the servers that host it.
func Enable(b *routemesh.MeshBuilder, kinds ...Registration) *routemesh.MeshBuilder {
	return EnableWith(b, Config{}, kinds...)
}

// EnableWith is Enable with runtime settings.
func EnableWith(b *routemesh.MeshBuilder, cfg Config, kinds ...Registration) *routemesh.MeshBuilder {
	regs := make([]*kindReg, 0, len(kinds))
	for _, k := range kinds {
		regs = append(regs, k.registration())
	}
	cfg = cfg.withDefaults()
	b.HandleDirectDeferred(packetSpot, inbound)
	return b.Extend(extName, func(n *routemesh.Node) (routemesh.Extension, error) { return newRuntime(n, cfg, regs) })
}

// runtime is the Spot runtime of one MeshNode: the extension the node
// supervises. Fixed fields are set before the node starts; the rest are
// leaf structures (lease box, directories, cache, counters) or atomics
// written by one actor each.
type runtime struct {
	n      *routemesh.Node
	cfg    Config
	store  location.Store
	dir    location.SpotDirectory
	states location.SpotStates    // where persistent kinds save their state
	rems   location.SpotReminders // nil: the store keeps no reminders
	// claimView reads a Spot's record with its state's epoch (nil when
	// the states live elsewhere: Config.States).
	claimView location.SpotClaimReader
	// stateClaim claims a persistent Spot and reads its state in one step
	// (nil unless claimView is set and the store can).
	stateClaim location.SpotStateClaimer
	role       routemesh.ObjectRole
	log        zerolog.Logger
	kinds      map[string]*kindState
	order      []*kindState

	lease   leaseBox
	incs    incBox
	members atomic.Pointer[[]member] // written by the members actor
	listed  atomic.Uint64            // member listings ended so far
	listing atomic.Uint64            // member listings started so far (one at a time: the n-th started ends as the n-th)
	membRef atomic.Pointer[actors.Ref]
	remRef  atomic.Pointer[actors.Ref] // the reminders actor (reminder_scan.go)
	cache   *ownerCache
	clock   *timerClock // the node's one clock for every Spot timer
	stats   counters
	actSeq  atomic.Uint64

	base     context.Context // parent of every turn's context; cancelled by Stop
	cancel   context.CancelFunc
	stopping atomic.Bool
	root     atomic.Pointer[actors.Ref] // the spots actor of the current incarnation
	steps    *storeWorkers              // store steps in flight
}

// kindState is one kind on this node.
type kindState struct {
	reg   *kindReg
	dir   *directory
	ref   atomic.Pointer[actors.Ref] // the kind actor of the current incarnation
	stats kindCounters
	turns *turnStats
	grace atomic.Int64 // unix nanos: until when Spots a drain deactivates take owed replies (0: none; drain.go)
}

// member is one node of the mesh as the store lists it.
type member struct {
	rid      string
	weight   uint32
	server   bool
	draining bool
	// kinds the Object Server hosts, sorted; nil when its descriptor does
	// not list them (an older version: it hosts every kind).
	kinds []string
}

// hosts reports whether the member is an Object Server hosting kind ("":
// any kind).
func (m *member) hosts(kind string) bool {
	if !m.server {
		return false
	}
	if m.kinds == nil || kind == "" {
		return true
	}
	_, found := slices.BinarySearch(m.kinds, kind)
	return found
}

func newRuntime(n *routemesh.Node, cfg Config, regs []*kindReg) (*runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if n.Store() == nil {
		return nil, fmt.Errorf("%w: Spots need a Location Store", ErrConfig)
	}
	if strings.Contains(n.Mesh(), ":") {
		return nil, fmt.Errorf("%w: mesh name %q: Spots need a mesh name without ':' (it separates the parts of a Spot's key)", ErrConfig, n.Mesh())
	}
	rt := &runtime{n: n, cfg: cfg, store: n.Store(), role: n.ObjectRole(), kinds: map[string]*kindState{}, steps: newStoreWorkers(),
		cache: newOwnerCache(cfg.CacheSize)}
	rt.dir = n.Store()
	rt.states = n.Store()
	if cfg.States != nil {
		rt.states = cfg.States
	} else if v, ok := n.Store().(location.SpotClaimReader); ok {
		rt.claimView = v // states beside the records: a claim reads both at once
		rt.stateClaim, _ = n.Store().(location.SpotStateClaimer)
	}
	rt.rems, _ = n.Store().(location.SpotReminders)
	rt.log = n.Logger().With().Str("component", "spots").Logger()
	rt.lease.cfg = cfg.fence()
	rt.incs.cfg = cfg.fence()
	for _, reg := range regs {
		if reg.err != nil {
			return nil, reg.err
		}
		if rt.kinds[reg.name] != nil {
			return nil, fmt.Errorf("%w: kind %s registered twice", ErrConfig, reg.name)
		}
		if rt.role != routemesh.ObjectServer {
			return nil, fmt.Errorf("%w: kind %s registered on an Object %s (only Object Servers host Spots)", ErrConfig, reg.name, rt.role)
		}
		if reg.onReminder != nil && rt.rems == nil {
			return nil, fmt.Errorf("%w: kind %s has reminders; the Location Store %T keeps none", ErrConfig, reg.name, n.Store())
		}
		ks := &kindState{reg: reg, dir: newDirectory(), turns: newTurnStats(reg)}
		rt.kinds[reg.name] = ks
		rt.order = append(rt.order, ks)
	}
	if len(rt.order) > MaxKinds {
		return nil, fmt.Errorf("%w: %d kinds on one Object Server, more than %d", ErrConfig, len(rt.order), MaxKinds)
	}
	rt.base, rt.cancel = context.WithCancel(context.Background())
	rt.clock = newClock(rt)
	empty := []member{}
	rt.members.Store(&empty)
	return rt, nil
}

// of returns the runtime attached to n.
func of(n *routemesh.Node) (*runtime, error) {
	if n == nil {
		return nil, fmt.Errorf("%w: nil node", ErrNotEnabled)
	}
	rt, ok := n.Extension(extName).(*runtime)
	if !ok {
		return nil, fmt.Errorf("%w: mesh %s (call spot.Enable on its builder)", ErrNotEnabled, n.Mesh())
	}
	return rt, nil
}

// valid reports whether act may act now: its node's lease generation is
// valid (R2) and the store shard that took its claim is confirmed in the
// same incarnation (rule C, incarnation.go).
func (rt *runtime) valid(act *activation, now time.Time) bool {
	return rt.lease.valid(act.gen, now) && rt.incs.valid(act.inc, now)
}

// goStore runs a store step on a store worker (storeworkers.go: a parked
// one, or a new one when none is free); after Stop it refuses.
func (rt *runtime) goStore(fn func()) bool {
	return rt.steps.run(fn)
}

// storeCtx bounds one store step.
func (rt *runtime) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), rt.cfg.StoreTimeout)
}

// HostedKinds implements routemesh.KindHost: the node's descriptor lists
// the kinds this Object Server hosts.
func (rt *runtime) HostedKinds() []string {
	out := make([]string, 0, len(rt.order))
	for _, ks := range rt.order {
		out = append(out, ks.reg.name)
	}
	return out
}

// Spec implements routemesh.Extension: the spots actor.
func (rt *runtime) Spec() actors.Spec { return rt.rootSpec() }

// Drain implements routemesh.Drainer (see drain.go): every active Spot of
// a persistent kind is handed to another Object Server (placement picks
// it; the node is draining, so not this one), without caller errors; what
// could not move, and the Spots of other kinds, are deactivated and
// released (state without persistence is lost) once they took the replies
// they are owed, until half the drain timeout. Nothing is activated here
// meanwhile. It returns once none of the node's Spots is active.
func (rt *runtime) Drain(ctx context.Context) error {
	grace := drainGrace(ctx, time.Now())
	rt.handOffAll(ctx)
	return rt.deactivateAll(ctx, false, grace)
}

// drainMoves bounds the moves a drain runs at once.
const drainMoves = 16

// handOffAll moves every active Spot of the persistent kinds away.
func (rt *runtime) handOffAll(ctx context.Context) {
	sem := make(chan struct{}, drainMoves)
	var wg sync.WaitGroup
	fresh := false // one fresh listing per drain, not one per Spot
	for _, ks := range rt.order {
		if ks.reg.persist == nil {
			continue
		}
		for _, id := range ks.dir.ids(1 << 30) {
			to, ok := rt.place(ks.reg.name, id)
			if !ok && !fresh {
				fresh = true
				to, ok = rt.placeFresh(ctx, ks.reg.name, id)
			}
			if !ok || to == rt.n.RID() {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := rt.move(ctx, ks, id, to); err != nil {
					rt.log.Warn().Err(err).Str("kind", ks.reg.name).Str("id", id).Msg("spots: drain could not move a Spot; it is saved and released instead")
				}
			}()
		}
	}
	wg.Wait()
}

// Stop implements routemesh.Extension: fence (no Spot takes a new turn),
// deactivate and release every record, then delete the lease; the node
// deletes its descriptor after this.
func (rt *runtime) Stop(ctx context.Context) {
	rt.stopping.Store(true)
	if err := rt.deactivateAll(ctx, true, time.Time{}); err != nil {
		rt.log.Warn().Err(err).Msg("spots: stop did not release every record; they expire with the lease")
	}
	rt.lease.end()
	gen, _ := rt.lease.holder(time.Now())
	if gen != 0 {
		sctx, cancel := rt.storeCtx()
		err := rt.dir.DeleteSpotLease(sctx, location.SpotLease{Mesh: rt.n.Mesh(), RID: rt.n.RID(), Generation: gen})
		cancel()
		if err != nil && !errors.Is(err, location.ErrNotFound) {
			rt.log.Warn().Err(err).Msg("spots: lease not deleted; it expires")
		}
	}
	rt.cancel()
	rt.steps.stop()
}

// deactivateAll asks every kind actor to deactivate and release all its
// Spots (all kinds at once: a drain's grace is one for all) and waits for
// them (bounded by ctx).
func (rt *runtime) deactivateAll(ctx context.Context, stopping bool, grace time.Time) error {
	var errs []error
	dones := make([]chan error, len(rt.order))
	for i, ks := range rt.order {
		ref := ks.ref.Load()
		if ref == nil {
			continue
		}
		done := make(chan error, 1)
		if err := ref.TellControl(&deactivateAll{stopping: stopping, grace: grace, done: done}); err != nil {
			errs = append(errs, fmt.Errorf("kind %s: %w", ks.reg.name, err))
			continue
		}
		dones[i] = done
	}
	for i, ks := range rt.order {
		done := dones[i]
		if done == nil {
			continue
		}
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("kind %s: %w", ks.reg.name, err))
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("kind %s: %w", ks.reg.name, ctx.Err()))
		}
	}
	return errors.Join(errs...)
}
