package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// params are one run's settings (true-time durations).
type params struct {
	fence    fence.Config
	maxPause time.Duration // check → act pause, drawn in [0, maxPause]
	maxLat   time.Duration // one-way message latency
	timeout  time.Duration // a store operation's deadline
	loss     float64       // chance a message is lost
	run      time.Duration // how long calls are issued
	nodes    int
	shards   int
	spots    int
	faults   bool // inject partitions, crashes, freezes
	lossy    bool // also failovers and empty restarts that can lose acknowledged writes
	// wait makes a write count only once the replica has it (WAIT 1): the
	// answer leaves after replication, and fails if a failover lost it.
	wait         bool
	replLag      time.Duration // replica lag of one write, drawn in [0, replLag]
	doubleLoss   float64       // chance a failover also loses replicated writes
	emptyRestart bool          // the store may restart empty (losing everything)
}

func defaultParams() params {
	return params{
		fence:        fence.Config{TTL: 600 * time.Millisecond, RenewEvery: 100 * time.Millisecond, Rho: 0.01, Margin: 100 * time.Millisecond},
		maxPause:     90 * time.Millisecond,
		maxLat:       5 * time.Millisecond,
		timeout:      50 * time.Millisecond,
		loss:         0.01,
		run:          8 * time.Second,
		nodes:        3,
		shards:       3,
		spots:        4,
		faults:       true,
		lossy:        true,
		replLag:      20 * time.Millisecond,
		doubleLoss:   0.1,
		emptyRestart: true,
	}
}

// event is one thing that happens at a true time.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type events []*event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// world is one simulation run.
type world struct {
	p      params
	rng    *rand.Rand
	now    time.Duration
	q      events
	seq    uint64
	shards []*shard
	nodes  []*node

	lossAt     time.Duration // first lost acknowledged write (-1: none)
	claims     map[int][]claimed
	calls      int
	ended      int
	turns      int
	failovers  int
	overlaps   int // turns that overlapped a newer claim after a lost write
	orphans    int // of those, by an activation whose own claim was lost
	lostClaims map[claimKey]bool
	problems   []string
}

type claimed struct {
	at  time.Duration
	rec fence.Record
}

func newWorld(seed uint64, p params) *world {
	w := &world{p: p, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), lossAt: -1, claims: map[int][]claimed{},
		lostClaims: map[claimKey]bool{}}
	for i := 0; i < p.shards; i++ {
		w.shards = append(w.shards, &shard{w: w, drift: w.drift(), leases: map[fence.Holder]time.Duration{},
			tombs: map[fence.Holder]bool{}, recs: map[int]fence.Record{}})
	}
	for i := 0; i < p.nodes; i++ {
		n := &node{w: w, id: i, rid: fmt.Sprintf("n%d", i), drift: w.drift()}
		w.nodes = append(w.nodes, n)
		n.start()
	}
	return w
}

func (w *world) drift() float64 { return (w.rng.Float64()*2 - 1) * w.p.fence.Rho / 2 }

// after schedules fn d from now.
func (w *world) after(d time.Duration, fn func()) {
	w.seq++
	heap.Push(&w.q, &event{at: w.now + max(d, 0), seq: w.seq, fn: fn})
}

func (w *world) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

func (w *world) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf("t=%v: ", w.now)+fmt.Sprintf(format, args...))
}

// run issues calls and faults for p.run, then lets everything in flight
// end.
func (w *world) run() {
	w.after(0, w.callLoop)
	if w.p.faults {
		w.after(w.between(100*time.Millisecond, 400*time.Millisecond), w.faultLoop)
	}
	end := w.p.run + 10*w.p.fence.TTL
	for w.q.Len() > 0 {
		e := heap.Pop(&w.q).(*event)
		if e.at > end {
			break
		}
		w.now = e.at
		e.fn()
	}
	if w.calls != w.ended {
		w.problem("%d calls issued, %d ended", w.calls, w.ended)
	}
}

func (w *world) callLoop() {
	if w.now >= w.p.run {
		return
	}
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	n.call(w.rng.IntN(w.p.spots))
	w.after(w.between(0, 4*time.Millisecond), w.callLoop)
}

// faultLoop injects one fault, then schedules the next.
func (w *world) faultLoop() {
	if w.now >= w.p.run {
		return
	}
	r := w.rng.IntN(100)
	if !w.p.lossy {
		r = 28 + w.rng.IntN(72)
	}
	switch {
	case r < 25: // a shard fails over and loses its last acknowledged writes
		w.shards[w.rng.IntN(len(w.shards))].failover(1 + w.rng.IntN(3))
	case r < 28 && w.p.emptyRestart: // the whole store restarts empty
		for _, s := range w.shards {
			s.restartEmpty()
		}
	case r < 28:
		w.shards[w.rng.IntN(len(w.shards))].failover(1 + w.rng.IntN(3))
	case r < 55: // a node is cut from one shard only
		n, s := w.nodes[w.rng.IntN(len(w.nodes))], w.rng.IntN(len(w.shards))
		n.cutUntil(s, w.now+w.between(0, 2*w.p.fence.TTL))
	case r < 70: // a node crashes and comes back with a new generation
		n := w.nodes[w.rng.IntN(len(w.nodes))]
		n.crash(w.between(0, time.Second))
	default: // a node's process pauses (renewals and calls stop)
		n := w.nodes[w.rng.IntN(len(w.nodes))]
		n.freezeUntil(w.now + w.between(0, 2*w.p.fence.TTL))
	}
	w.after(w.between(100*time.Millisecond, 500*time.Millisecond), w.faultLoop)
}

// claimApplied records a compare-and-set written at the shard (true time
// now) and checks that epochs only grow while no write is lost.
func (w *world) claimApplied(spot int, rec fence.Record) {
	cs := w.claims[spot]
	if len(cs) > 0 && w.lossAt < 0 && rec.Epoch <= cs[len(cs)-1].rec.Epoch {
		w.problem("spot %d: epoch %d after epoch %d with no write lost", spot, rec.Epoch, cs[len(cs)-1].rec.Epoch)
	}
	w.claims[spot] = append(cs, claimed{at: w.now, rec: rec})
}

// turn records an activation's turn at true time now and checks the
// guarantee against every claim written so far.
func (w *world) turn(spot int, act fence.Record) {
	w.turns++
	for _, c := range w.claims[spot] {
		if c.at > w.now || c.rec == act || c.rec.Epoch < act.Epoch {
			continue
		}
		// A newer (or equal but different) claim was written before this
		// turn: two activations overlap.
		if w.lossAt < 0 || w.lossAt > w.now {
			w.problem("spot %d: %v (epoch %d) ran a turn %v after %v claimed epoch %d, with no write lost",
				spot, act.Holder, act.Epoch, w.now-c.at, c.rec.Holder, c.rec.Epoch)
			return
		}
		w.overlaps++
		if w.lostClaims[claimKey{spot, act}] || c.rec.Epoch == act.Epoch {
			// This activation's own claim was lost with a failover: only
			// its fenced writes (or its lease) can stop it. Counted.
			w.orphans++
			return
		}
		slack := time.Duration(float64(w.p.fence.TTL+w.p.fence.Margin) * 2 * w.p.fence.Rho)
		if lim := w.p.fence.TTL + w.p.fence.Margin + slack; w.now-c.at > lim {
			w.problem("spot %d: overlap of %v after a lost write, over the bound %v", spot, w.now-c.at, lim)
		}
		return
	}
}

type claimKey struct {
	spot int
	rec  fence.Record
}
