package routemesh

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Hung-handler detection (after the CUBRID broker's hang check):
// a handler still running past its caller's deadline is "hung". Each owner
// counts its own, the tree shows the count on the owner (with the handlers
// running, info "running", beside the queued messages), and when the node
// holds HungThreshold or more hung handlers it stops admitting new work
// (callers get ErrBusy) and says so in status — it never kills live work.
// Admission resumes by itself once the count drops below the threshold.

// hungTracker is the run slots of one owner's pool workers: a small leaf
// structure (mutex inside) shared across restarts. A worker registers its
// slot once when it starts and removes it when it leaves; a handler's start
// and end are a store into its worker's own slot (one writer, a cache line
// of its own), so handlers running side by side touch no shared word. The
// sweep and the status read the slots.
type hungTracker struct {
	mu    sync.Mutex
	slots map[*runSlot]struct{}
}

// runSlot is what one pool worker runs: the deadline of its handler
// (nanoseconds since slotEpoch, on the monotonic clock), 0 while it runs
// none. Padded to a cache line: the worker writes it twice per handler
// while other workers write theirs.
type runSlot struct {
	deadline atomic.Int64
	shard    int // the served counters' shard its worker counts into (fixed)
	_        [48]byte
}

// slotEpoch is the origin of the run slots' deadlines: durations since it
// read the monotonic clock, so a step of the wall clock moves no deadline.
var slotEpoch = time.Now()

func newHungTracker() *hungTracker { return &hungTracker{slots: map[*runSlot]struct{}{}} }

// add registers a worker's slot.
func (h *hungTracker) add(s *runSlot) {
	h.mu.Lock()
	h.slots[s] = struct{}{}
	h.mu.Unlock()
}

// remove forgets a worker's slot (the worker leaves).
func (h *hungTracker) remove(s *runSlot) {
	h.mu.Lock()
	delete(h.slots, s)
	h.mu.Unlock()
}

// start records that the slot's worker runs a handler that must end by
// deadline.
func (s *runSlot) start(deadline time.Time) { s.deadline.Store(max(int64(deadline.Sub(slotEpoch)), 1)) }

// end records that the slot's handler returned.
func (s *runSlot) end() { s.deadline.Store(0) }

// overdue counts the handlers past their deadline at now, and all the
// handlers running.
func (h *hungTracker) overdue(now time.Time) (hung, running int) {
	t := int64(now.Sub(slotEpoch))
	h.mu.Lock()
	for s := range h.slots {
		if d := s.deadline.Load(); d != 0 {
			running++
			if t > d {
				hung++
			}
		}
	}
	h.mu.Unlock()
	return hung, running
}

// running counts the handlers running now.
func (h *hungTracker) running() int64 {
	_, n := h.overdue(slotEpoch)
	return int64(n)
}

type hungCheck struct{ epoch uint64 }

// hungSweep runs on the mesh actor: count hung handlers per owner, publish
// them in the tree, pause or resume admission, and schedule the next sweep.
func (m *meshActor) hungSweep() {
	n := m.n
	if m.stopped {
		return
	}
	now := time.Now()
	total := 0
	reg := n.sys.Registry()
	for _, o := range n.owners(n.load()) {
		c, running := o.pool.track.overdue(now)
		o.pool.trim() // workers idle since the last sweep leave
		total += c
		reg.SetHung(o.path, c)
		// Running handlers beside the queued messages the tree shows.
		reg.SetInfo(o.path, "running", strconv.Itoa(running))
	}
	limit := n.cfg.HungThreshold
	cur := n.load()
	was := cur.paused
	paused := limit > 0 && total >= limit
	if cur.hung != int64(total) || was != paused {
		n.update(func(v *view) { v.hung, v.paused = int64(total), paused })
	}
	switch {
	case paused && !was:
		n.log.Warn().Int("hung", total).Int("threshold", limit).Msg("admission paused: too many hung handlers")
	case was && !paused:
		n.log.Info().Int("hung", total).Msg("admission resumed")
	}
	ref, epoch := m.self, m.epoch
	time.AfterFunc(n.cfg.HungCheckInterval, func() { _ = ref.TellControl(&hungCheck{epoch: epoch}) })
}

// ownerInfo names one owner's pool and tree path.
type ownerInfo struct {
	path string
	pool *handlerPool
}

func (n *Node) owners(v *view) []ownerInfo {
	out := make([]ownerInfo, 0, len(v.owners)+1)
	if v.direct != nil {
		out = append(out, ownerInfo{path: v.direct.Path(), pool: n.directPool})
	}
	for name, ref := range v.owners {
		out = append(out, ownerInfo{path: ref.Path(), pool: n.channels[name].pool})
	}
	return out
}
