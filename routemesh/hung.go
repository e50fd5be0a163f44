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

// hungTracker is the set of running handlers of one owner with their
// deadlines: a small leaf structure (mutex inside), shared across restarts.
// Entries live in a slice reused through a free list (at most the
// owner's handler concurrency are in use), so a handler costs no map
// update.
type hungTracker struct {
	mu      sync.Mutex
	running []time.Time // by key; zero = free
	free    []int       // free keys
	inUse   int
	hung    atomic.Int64 // last count, for status
}

func newHungTracker() *hungTracker { return &hungTracker{} }

// start records a handler that must end by deadline and returns its key.
func (h *hungTracker) start(deadline time.Time) int {
	h.mu.Lock()
	var k int
	if n := len(h.free); n > 0 {
		k = h.free[n-1]
		h.free = h.free[:n-1]
		h.running[k] = deadline
	} else {
		k = len(h.running)
		h.running = append(h.running, deadline)
	}
	h.inUse++
	h.mu.Unlock()
	return k
}

// end forgets a handler that returned.
func (h *hungTracker) end(k int) {
	h.mu.Lock()
	h.running[k] = time.Time{}
	h.free = append(h.free, k)
	h.inUse--
	h.mu.Unlock()
}

// overdue counts the handlers past their deadline at now, and all the
// handlers running.
func (h *hungTracker) overdue(now time.Time) (hung, running int) {
	h.mu.Lock()
	for _, d := range h.running {
		if !d.IsZero() && now.After(d) {
			hung++
		}
	}
	running = h.inUse
	h.mu.Unlock()
	h.hung.Store(int64(hung))
	return hung, running
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
		c, running := o.track.overdue(now)
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

// ownerInfo names one owner's tracker and tree path.
type ownerInfo struct {
	path  string
	track *hungTracker
	pool  *handlerPool
}

func (n *Node) owners(v *view) []ownerInfo {
	out := make([]ownerInfo, 0, len(v.owners)+1)
	if v.direct != nil {
		out = append(out, ownerInfo{path: v.direct.Path(), track: n.directTrack, pool: n.directPool})
	}
	for name, ref := range v.owners {
		out = append(out, ownerInfo{path: ref.Path(), track: n.channels[name].track, pool: n.channels[name].pool})
	}
	return out
}
