package spot

import (
	"errors"
	"github.com/zlink-go/zlink/location"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
)

// activation is one activation of a Spot on this node: its actor, the
// ownership it was claimed under, and what the call path reads without
// asking the kind actor (leaf atomics).
type activation struct {
	id    string
	seq   uint64    // unique on this node: the call-chain identity
	gen   uint64    // lease generation it was claimed under
	inc   *incState // the store shard incarnation that took its claim (nil: none reported)
	epoch uint64
	ref   *actors.Ref
	// pre is the state its claim read with the compare-and-set (nil: read
	// it at the start); its actor's first start takes it, a restart reads.
	pre *location.ClaimedSpot

	closing   atomic.Bool   // deactivating: new calls go through the kind actor
	closeSent bool          // the last-turn request is queued (kind actor only)
	turn      atomic.Uint64 // running turn (0 = none)
	lastUsed  atomic.Int64  // unix nanos of the last message
	fenced    atomic.Bool   // ended because the lease was lost: no release
	dirty     atomic.Bool   // persistent kinds: changed since the last save
	saved     atomic.Int64  // unix nanos of the last save (or the activation)
	drain     drainMarks    // a drain's deactivation: replies owed, grace (drain.go)

	// mu guards the outbound calls its turns are waiting on (call-chain
	// links). A leaf.
	mu      sync.Mutex
	calls   uint64
	waiting *[]uint64 // nil until its first outbound call (8 bytes, not a slice's 24, per idle Spot)

	re *reentry // reentrant kinds only (nil otherwise): the turn stack and what waits for it

	// timers are the Spot's timers, touched only by its turns (one at a
	// time) and, before the first turn of an adopted activation, by the
	// message that restores them; the node's clock keeps their schedule.
	timers map[string]*timerData

	// remFired is the due time each reminder last fired for in this
	// activation (its epoch) while the write moving it on is not done:
	// touched only by its turns (reminders.go).
	remFired map[string]remMark

	// open lists the requests left open (Defer), touched by the Spot's
	// turns; openN counts them for the idle sweep. saveNow is the Spot's
	// save before a deferred reply (ReplyAfterWrite kinds; nil otherwise).
	open    map[*openReq]struct{}
	openN   atomic.Int64
	saveNow func() error
	// quiet is set by a move that waits for the open requests: closed when
	// the last of them ends.
	quiet atomic.Pointer[quietGate]
}

func (a *activation) touch(now time.Time) { a.lastUsed.Store(now.UnixNano()) }

// saveForReply saves the Spot's state before a deferred reply when its
// kind replies after writes.
func (a *activation) saveForReply() error {
	if a.saveNow == nil {
		return nil
	}
	return a.saveNow()
}

// waitsOn reports whether the chain holds a call this activation is
// waiting on right now: a turn of it is blocked in that call, so queueing
// the request behind the turn would deadlock. A chain link of a call that
// has ended (timed out) does not count: that request just queues.
func (a *activation) waitsOn(chain []link) bool {
	if len(chain) == 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range chain {
		if l.act != a.seq {
			continue
		}
		if a.waiting == nil {
			return false
		}
		for _, w := range *a.waiting {
			if w == l.turn {
				return true
			}
		}
	}
	return false
}

// begin records an outbound call of a turn and returns its link; end
// forgets it when the call has ended.
func (a *activation) begin() link {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.waiting == nil {
		a.waiting = new([]uint64)
	}
	*a.waiting = append(*a.waiting, a.calls)
	return link{act: a.seq, turn: a.calls}
}

func (a *activation) end(l link) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting == nil {
		return
	}
	w := *a.waiting
	for i, t := range w {
		if t == l.turn {
			*a.waiting = append(w[:i], w[i+1:]...)
			break
		}
	}
}

// directory maps a kind's Spot IDs to their activations on this node. The
// kind actor is its only writer; the call path reads it. A leaf structure:
// each shard's mutex guards only its map.
type directory struct {
	seed   maphash.Seed
	shards [32]dirShard
}

type dirShard struct {
	mu sync.RWMutex
	m  map[string]*activation
	// slow counts, per ID, deliveries on their way through the kind actor:
	// while there are any, later ones follow them (FIFO per caller).
	slow map[string]int32
}

func newDirectory() *directory {
	d := &directory{seed: maphash.MakeSeed()}
	for i := range d.shards {
		d.shards[i].m = map[string]*activation{}
	}
	return d
}

func (d *directory) shard(id string) *dirShard {
	return &d.shards[maphash.String(d.seed, id)%uint64(len(d.shards))]
}

func (d *directory) get(id string) *activation {
	s := d.shard(id)
	s.mu.RLock()
	a := s.m[id]
	s.mu.RUnlock()
	return a
}

// route returns the activation a delivery for id may go to directly, or
// nil after counting the delivery as one that goes through the kind actor
// (no activation, a closing one, or earlier deliveries still on that way).
//
// check (nil: none) is a cycle test that may take the delivery elsewhere:
// it reports false. It takes the activation's own lock, so it runs before
// the shard lock is taken (again under it only when the activation changed
// meanwhile). tell posts the delivery under the shard lock, so that a
// close (setClosing) is ordered after it: nothing posted directly can land
// behind a Spot's last turn (TestDirectory_NoDirectPostAfterClosing).
func (d *directory) route(id string, check func(*activation) bool, tell func(*activation) error) (act *activation, handled bool, err error) {
	s := d.shard(id)
	var pre *activation
	preOK := true
	if check != nil {
		if pre = d.get(id); pre != nil {
			preOK = check(pre)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.m[id]; a != nil && s.slow[id] == 0 && !a.closing.Load() {
		if check != nil && (a == pre && !preOK || a != pre && !check(a)) {
			return a, true, nil
		}
		if err := tell(a); err == nil || !errors.Is(err, actors.ErrStopped) {
			return a, true, err
		}
	}
	d.countSlowLocked(s, id)
	return nil, false, nil
}

// setClosing marks act closing under its shard lock: from here on, new
// calls go through the kind actor, and every direct post happened before.
func (d *directory) setClosing(act *activation) {
	s := d.shard(act.id)
	s.mu.Lock()
	act.closing.Store(true)
	s.mu.Unlock()
}

// countSlow counts a delivery that goes through the kind actor.
func (d *directory) countSlow(id string) {
	s := d.shard(id)
	s.mu.Lock()
	d.countSlowLocked(s, id)
	s.mu.Unlock()
}

func (d *directory) countSlowLocked(s *dirShard, id string) {
	if s.slow == nil {
		s.slow = map[string]int32{}
	}
	s.slow[id]++
}

// slowDone: the kind actor has queued a counted delivery.
func (d *directory) slowDone(id string) {
	s := d.shard(id)
	s.mu.Lock()
	if s.slow[id]--; s.slow[id] <= 0 {
		delete(s.slow, id)
	}
	s.mu.Unlock()
}

func (d *directory) put(a *activation) {
	s := d.shard(a.id)
	s.mu.Lock()
	s.m[a.id] = a
	s.mu.Unlock()
}

// remove deletes id if it still maps to a.
func (d *directory) remove(a *activation) {
	s := d.shard(a.id)
	s.mu.Lock()
	if s.m[a.id] == a {
		delete(s.m, a.id)
	}
	s.mu.Unlock()
}

// each calls fn for every activation, shard by shard under the shard's
// read lock: fn must not write the directory.
func (d *directory) each(fn func(*activation)) {
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.RLock()
		for _, a := range s.m {
			fn(a)
		}
		s.mu.RUnlock()
	}
}

// all returns every activation (a copy, so the caller may write).
func (d *directory) all() []*activation {
	var out []*activation
	d.each(func(a *activation) { out = append(out, a) })
	return out
}

func (d *directory) len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// ids lists the active IDs (admin, on request).
func (d *directory) ids(limit int) []string {
	var out []string
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.RLock()
		for id := range s.m {
			if len(out) >= limit {
				s.mu.RUnlock()
				return out
			}
			out = append(out, id)
		}
		s.mu.RUnlock()
	}
	return out
}

// ownerCache is the caller cache (kind, ID) → owner RID, bounded: when
// full, a shard drops an arbitrary half of its entries. A stale entry costs
// at most one redirect. A leaf structure.
type ownerCache struct {
	seed   maphash.Seed
	max    int // per shard
	shards [16]cacheShard
}

type cacheShard struct {
	mu sync.Mutex
	m  map[cacheKey]string
}

type cacheKey struct{ kind, id string }

func newOwnerCache(size int) *ownerCache {
	c := &ownerCache{seed: maphash.MakeSeed(), max: max(size/16, 1)}
	for i := range c.shards {
		c.shards[i].m = map[cacheKey]string{}
	}
	return c
}

func (c *ownerCache) shard(k cacheKey) *cacheShard {
	return &c.shards[maphash.String(c.seed, k.id)%uint64(len(c.shards))]
}

func (c *ownerCache) get(kind, id string) string {
	k := cacheKey{kind, id}
	s := c.shard(k)
	s.mu.Lock()
	rid := s.m[k]
	s.mu.Unlock()
	return rid
}

func (c *ownerCache) put(kind, id, rid string) {
	k := cacheKey{kind, id}
	s := c.shard(k)
	s.mu.Lock()
	if _, ok := s.m[k]; !ok && len(s.m) >= c.max {
		n := 0
		for key := range s.m {
			if n >= c.max/2 {
				break
			}
			delete(s.m, key)
			n++
		}
	}
	s.m[k] = rid
	s.mu.Unlock()
}

// drop removes the entry if it still names rid ("" removes any).
func (c *ownerCache) drop(kind, id, rid string) {
	k := cacheKey{kind, id}
	s := c.shard(k)
	s.mu.Lock()
	if cur, ok := s.m[k]; ok && (rid == "" || cur == rid) {
		delete(s.m, k)
	}
	s.mu.Unlock()
}

func (c *ownerCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
