package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// params are one run's settings (true-time durations unless noted).
type params struct {
	fence       fence.Config
	maxPause    time.Duration // check → act pause, drawn in [0, maxPause] (node clock)
	maxLat      time.Duration // one-way message latency
	timeout     time.Duration // a store operation's deadline (node clock)
	callTimeout time.Duration // a caller's deadline
	loss        float64       // chance a message is lost
	late        float64       // chance a store request is applied only after its deadline passed
	run         time.Duration // how long calls and faults are issued
	nodes       int
	shards      int
	spots       int
	calls       bool // random calls (off in scripted scenarios)
	faults      bool // partitions, crashes, pauses, drift extremes
	lossy       bool // also failovers and empty restarts that can lose acknowledged writes
	moves       bool // idle releases and transfers (R4)
	bursts      bool // concurrent first calls: many callers, one Spot, one instant
	// wait makes a write count only once the replica has it (WAIT 1): the
	// answer leaves after replication, and never if a failover lost it.
	wait    bool
	replLag time.Duration // replica lag of one write, drawn in [0, replLag]; replication is in order
	// maxK: a failover loses the last k acknowledged writes, k drawn in
	// [0, maxK] per failover (besides what the replica had not received).
	// With wait, k > 0 only on a double failure (doubleLoss).
	maxK         int
	doubleLoss   float64
	emptyRestart bool // the store (or one shard) may restart empty
	// confirm is a candidate rule beyond R1–R4 (see doc.go): every store
	// answer carries the shard's incarnation, nodes probe every shard each
	// RenewEvery, and an activation acts only while its shard's incarnation
	// is the one it was claimed under and was confirmed within the lease
	// deadline (a fence.Lease per shard).
	confirm bool
	// ackedMine is a second candidate rule: a claim that finds the record
	// already naming its own lifecycle (fence.Mine) activates only on a
	// write of that lifecycle the store acknowledged (its own claim, or a
	// same-value "touch" write sent now), never on a read alone: a read
	// from the master can see a write no replica has yet.
	ackedMine bool
	// settleMoves: after a release or transfer whose answer was lost the
	// node retries it until an answer is definite, and neither activates
	// the Spot nor takes calls for it meanwhile (a late request may still
	// apply). Off: the Spot is claimable again at once.
	settleMoves bool
	replLagMin  time.Duration // the least replica lag (scenarios)
}

func defaultParams() params {
	p := params{
		fence:        fence.Config{TTL: 600 * time.Millisecond, RenewEvery: 100 * time.Millisecond, Rho: 0.01, Margin: 100 * time.Millisecond},
		maxPause:     90 * time.Millisecond,
		maxLat:       5 * time.Millisecond,
		timeout:      50 * time.Millisecond,
		callTimeout:  2 * time.Second,
		loss:         0.01,
		late:         0.002,
		run:          8 * time.Second,
		nodes:        3,
		shards:       3,
		spots:        4,
		calls:        true,
		faults:       true,
		lossy:        true,
		moves:        true,
		bursts:       true,
		replLag:      20 * time.Millisecond,
		maxK:         3,
		doubleLoss:   0.1,
		emptyRestart: true,
		confirm:      true,
		ackedMine:    true,
		settleMoves:  true,
	}
	if marginZeroBuild {
		p.fence.Margin = 0
	}
	return p
}

// noLoss are the defaults without anything that can lose an acknowledged
// write: partitions, crashes, pauses, drift, lost and late messages only.
func noLoss() params {
	p := defaultParams()
	p.lossy = false
	return p
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

// stats are what a run counts; tests assert on them so that every path
// they name is exercised, not only written.
type stats struct {
	events, turns, served, failed int
	overlaps, overlapTurns        int           // incidents (activation × superseding write) and turns in them
	orphans                       int           // incidents of an activation whose own claim write was lost
	maxOverlap                    time.Duration // longest overlap seen (true time)
	failovers, restarts           int
	lostAcked                     int // acknowledged writes (or keys) lost by failovers and restarts
	lostWrites                    int // every write lost by failovers, acknowledged or not
	crashes, pauses, cuts, late   int
	created, refusedRenew         int // leases created; renewals refused
	refusedWhileValid             int // of those, while the node still counted the lease valid (logged)
	tombRefusals                  int // creates or renewals refused by a tombstone
	deadlineFences, reregs        int // deadline passed; new generations without a crash
	checksGone, casConflicts      int // owner checks that tombstoned; compare-and-sets that lost
	redirects, noTarget           int
	activations, confirmFences    int
	incLogs                       int // incarnation changes nodes logged
	releases, transfers, movesLog int // moves that succeeded; moves that found the record changed (logged)
	bursts, lateReplies           int
	dupActivations                int // (Spot, epoch) activated by two lifecycles (only after a lost write)
}

// world is one simulation run.
type world struct {
	p      params
	seed   uint64
	rng    *rand.Rand
	now    time.Duration
	q      events
	seq    uint64
	shards []*shard
	nodes  []*node
	end    time.Duration

	lossAt     time.Duration   // first lost acknowledged write (-1: none)
	lossEvents []time.Duration // every failover or restart that lost an acknowledged write
	hist       map[int][]applied
	actsBy     map[spotEpoch]map[fence.Holder]bool
	actsOf     map[int][]*activation // per Spot, in order of establishment
	reqs       []*request
	incidents  []incident
	st         stats
	problems   []string
	trace      []string // ring of the last trace lines
	traceAt    int
	tracing    bool
	firstTrace string // the trace up to the first problem
	// on, when set, is told of every record write and activation
	// (scripted scenarios react to them).
	on     func(what string, spot int, rec fence.Record)
	onStep func(caller, step string, spot int) // every claim step as a shard applies it
}

func newWorld(seed uint64, p params) *world {
	w := &world{p: p, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), lossAt: -1,
		hist: map[int][]applied{}, actsOf: map[int][]*activation{}, actsBy: map[spotEpoch]map[fence.Holder]bool{},
		end: p.run + 10*p.fence.TTL, trace: make([]string, 0, traceLen)}
	for i := 0; i < p.shards; i++ {
		w.shards = append(w.shards, newShard(w, i))
	}
	for i := 0; i < p.nodes; i++ {
		n := &node{w: w, id: i, rid: fmt.Sprintf("n%d", i), drift: w.drift()}
		w.nodes = append(w.nodes, n)
		n.boot()
	}
	return w
}

// drift is a clock's rate error in [−ρ/2, ρ/2] (so any two clocks differ
// by at most ρ), at an extreme one time in three.
func (w *world) drift() float64 {
	half := w.p.fence.Rho / 2
	switch w.rng.IntN(6) {
	case 0:
		return -half
	case 1:
		return half
	}
	return (w.rng.Float64()*2 - 1) * half
}

// after schedules fn d from now.
func (w *world) after(d time.Duration, fn func()) {
	w.seq++
	heap.Push(&w.q, &event{at: w.now + max(d, 0), seq: w.seq, fn: fn})
}

// at schedules fn at true time t (scripted scenarios).
func (w *world) at(t time.Duration, fn func()) { w.after(t-w.now, fn) }

func (w *world) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

func (w *world) chance(p float64) bool { return p > 0 && w.rng.Float64() < p }

func (w *world) lat() time.Duration { return w.between(0, w.p.maxLat) }

func (w *world) problem(format string, args ...any) {
	msg := fmt.Sprintf("t=%v: ", w.now) + fmt.Sprintf(format, args...)
	w.problems = append(w.problems, msg)
	w.tracef("PROBLEM %s", msg)
	if len(w.problems) == 1 {
		w.firstTrace = w.lastSteps(traceLen)
	}
}

const traceLen = 256

// tracef appends one line to the ring of recent steps printed on failure
// (when tracing: runs are deterministic, so a failing seed is run again
// with tracing on).
func (w *world) tracef(format string, args ...any) {
	if !w.tracing {
		return
	}
	line := fmt.Sprintf("%9v  ", w.now) + fmt.Sprintf(format, args...)
	if len(w.trace) < traceLen {
		w.trace = append(w.trace, line)
		return
	}
	w.trace[w.traceAt] = line
	w.traceAt = (w.traceAt + 1) % traceLen
}

// lastSteps returns the last n trace lines, oldest first.
func (w *world) lastSteps(n int) string {
	lines := append(append([]string{}, w.trace[w.traceAt:]...), w.trace[:w.traceAt]...)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// run issues calls and faults for p.run, then lets everything in flight
// end, and runs the end-of-run checks.
func (w *world) run() {
	if w.p.calls {
		w.after(0, w.callLoop)
	}
	if w.p.faults {
		w.after(w.between(100*time.Millisecond, 400*time.Millisecond), w.faultLoop)
	}
	if w.p.moves {
		w.after(w.between(200*time.Millisecond, 600*time.Millisecond), w.moveLoop)
	}
	w.runUntil(w.end)
	w.finalChecks()
}

// runUntil runs every event up to true time t.
func (w *world) runUntil(t time.Duration) {
	for w.q.Len() > 0 && w.q[0].at <= t {
		e := heap.Pop(&w.q).(*event)
		w.now = e.at
		w.st.events++
		e.fn()
	}
	w.now = max(w.now, t)
}

func (w *world) node(rid string) *node {
	for _, n := range w.nodes {
		if n.rid == rid {
			return n
		}
	}
	return nil
}

// summary is one line of counters for logs and failure messages.
func (w *world) summary() string {
	s := w.st
	return fmt.Sprintf("turns %d, served %d/%d calls, overlaps %d (orphans %d, max %v), failovers %d (lost acked %d), restarts %d, "+
		"crashes %d, re-registrations %d (refused %d, deadline %d), activations %d, conflicts %d, tombstoned %d, moves %d+%d",
		s.turns, s.served, len(w.reqs), s.overlaps, s.orphans, s.maxOverlap, s.failovers, s.lostAcked, s.restarts,
		s.crashes, s.reregs, s.refusedRenew, s.deadlineFences, s.activations, s.casConflicts, s.checksGone, s.releases, s.transfers)
}
