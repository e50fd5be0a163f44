package routemesh

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
)

// result is the one terminal outcome of a call.
type result struct {
	payload  []byte
	err      error
	from     string            // RID that served it
	headroom map[string]uint32 // what the server reported (replies)
	expired  bool              // the table ended the call at its deadline
	at       int64             // table clock when it arrived (0 = not read)
}

// notifier receives an asynchronous call's result instead of a waiting
// goroutine; it runs on the completing goroutine and must not block.
type notifier interface{ notify(result) }

// pending is one request waiting for its terminal result.
type pending struct {
	done chan result // buffered 1: completion never blocks (blocking calls)
	pipe string      // pipe the request went out on ("" = local)
	rid  string
	// notify, when set (an asynchronous call), receives the result instead
	// of done.
	notify notifier

	// The call's own deadline, when the table ends it (asynchronous calls,
	// and blocking calls whose context has none); guarded by the shard's
	// mutex while the entry is in the table.
	deadline int64         // table clock (nanoseconds since epoch); 0 = none
	timeout  time.Duration // for the error text
	// hidx is where it is: ≥ 0 its index in the shard's deadline heap;
	// ≤ -2 at queueSlot(hidx) in the shard's deadline queue; -1 in neither.
	hidx int
	corr uint64 // its key in the table (set by insert)
}

// finish hands r to whoever waits: exactly once, by whoever removed the
// entry from the table.
func (p *pending) finish(r result) {
	if p.notify != nil {
		p.notify.notify(r)
		return
	}
	p.done <- r
}

// timeoutError is the result of a call the table ended at its deadline.
func (p *pending) timeoutError() error {
	return fmt.Errorf("%w: no reply from %s within %v", zerr.ErrTimeout, p.rid, p.timeout)
}

// callTable correlates requests with replies and guarantees exactly one
// terminal result per request: whoever removes the entry delivers. It is a
// small leaf structure guarded by a mutex (sharded to keep contention low),
// because every call would otherwise pay two actor hops.
//
// It also ends calls at their deadline: each shard keeps its entries with a
// deadline in deadline order and one timer armed at the earliest deadline,
// so a call costs no timer of its own. Calls made with one timeout arrive
// in deadline order: those go to a queue (append, and remove in place, in
// constant time); an entry due before the queue's last one goes to a
// min-heap instead. The timer is not moved when the earliest
// entry ends early: it fires, finds nothing due and re-arms for the new
// earliest one (about once per timeout period when calls end in time).
type callTable struct {
	shards  [16]callShard
	pending workCount // calls registered and not yet ended (Stop waits on it)
	epoch   time.Time // the table clock's zero (monotonic)
}

type callShard struct {
	mu     sync.Mutex
	byCorr corrIndex
	heap   []*pending  // entries with a deadline out of order, a min-heap on deadline
	fifo   []*pending  // entries with a deadline in order, from fhead; nil = removed (see unqueue)
	fhead  int         // first slot of fifo in use
	flive  int         // non-nil entries in fifo
	flast  int64       // deadline of the last entry appended to fifo
	timer  *time.Timer // fires the sweep at armed; nil until first needed
	armed  int64       // deadline the timer is set for; 0 = not armed
	t      *callTable
}

func newCallTable() *callTable {
	t := &callTable{epoch: time.Now()}
	t.pending.init()
	for i := range t.shards {
		t.shards[i].t = t
	}
	return t
}

// now reads the table clock: monotonic nanoseconds since the table's epoch
// (never 0 once a call can be registered: the epoch is in the past).
func (t *callTable) now() int64 { return int64(time.Since(t.epoch)) + 1 }

// at is the table clock at now, a reading taken for something else (no
// clock read of its own).
func (t *callTable) at(now time.Time) int64 { return int64(now.Sub(t.epoch)) + 1 }

var pendingPool = sync.Pool{New: func() any { return &pending{done: make(chan result, 1), hidx: -1} }}

func (t *callTable) shard(corr uint64) *callShard { return &t.shards[corr&15] }

// add registers corr as pending on pipe for a blocking call; with a timeout
// (> 0) the table ends it with ErrTimeout that long after now (a table clock
// reading).
func (t *callTable) add(corr uint64, pipe, rid string) *pending {
	return t.addTimed(corr, pipe, rid, 0, 0)
}

func (t *callTable) addTimed(corr uint64, pipe, rid string, now int64, timeout time.Duration) *pending {
	p := pendingPool.Get().(*pending)
	p.pipe, p.rid = pipe, rid
	if timeout > 0 {
		p.deadline, p.timeout = now+int64(timeout), timeout
	}
	t.insert(corr, p)
	return p
}

// addNotify registers an asynchronous call p (not pooled: it belongs to
// the caller's call state): its result goes to p.notify, and the table
// ends it with ErrTimeout at p.deadline.
func (t *callTable) addNotify(corr uint64, p *pending) {
	p.hidx = -1
	t.insert(corr, p)
}

func (t *callTable) insert(corr uint64, p *pending) {
	t.pending.add()
	p.corr = corr
	s := t.shard(corr)
	s.mu.Lock()
	s.byCorr.put(p)
	if p.deadline != 0 {
		s.add(p)
		if s.armed == 0 || p.deadline < s.armed {
			s.arm(p.deadline)
		}
	}
	s.mu.Unlock()
}

// take removes corr and returns its entry, or nil if it already ended.
func (t *callTable) take(corr uint64) *pending {
	s := t.shard(corr)
	s.mu.Lock()
	p := s.byCorr.take(corr)
	if p != nil {
		s.unlink(p)
	}
	s.mu.Unlock()
	if p != nil {
		t.pending.done()
	}
	return p
}

// complete delivers r to corr if it is still pending. It reports whether
// it delivered (false: the call already ended, e.g. by timeout).
func (t *callTable) complete(corr uint64, r result) bool {
	p := t.take(corr)
	if p == nil {
		return false
	}
	p.finish(r)
	return true
}

// release returns an entry whose result has been consumed to the pool.
func (t *callTable) release(p *pending) {
	p.pipe, p.rid = "", ""
	p.deadline, p.timeout, p.hidx = 0, 0, -1
	pendingPool.Put(p)
}

// failPipe ends every call pending on pipe with err (ErrPeerLost). It scans
// the table: a pipe is lost rarely, and keeping a per-pipe index would cost
// every call two more map updates.
func (t *callTable) failPipe(pipe string, err error) int {
	n := 0
	var ps []*pending
	for i := range t.shards {
		s := &t.shards[i]
		ps = ps[:0]
		s.mu.Lock()
		ps = s.byCorr.removeIf(func(p *pending) bool { return p.pipe == pipe }, ps)
		for _, p := range ps {
			s.unlink(p)
		}
		s.mu.Unlock()
		for _, p := range ps {
			t.pending.done()
			p.finish(result{err: err, from: p.rid})
			n++
		}
	}
	return n
}

// failAll ends every pending call with err (shutdown).
func (t *callTable) failAll(err error) int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		ps := s.byCorr.removeIf(func(*pending) bool { return true }, make([]*pending, 0, s.byCorr.len()))
		for _, p := range ps {
			p.hidx = -1
		}
		clear(s.heap)
		s.heap = s.heap[:0]
		clear(s.fifo)
		s.fifo, s.fhead, s.flive = s.fifo[:0], 0, 0
		if s.timer != nil {
			s.timer.Stop() // nothing left to sweep
			s.armed = 0
		}
		s.mu.Unlock()
		for _, p := range ps {
			t.pending.done()
			p.finish(result{err: err, from: p.rid})
			n++
		}
	}
	return n
}

// wait returns once no call is pending, or with ctx's error.
func (t *callTable) wait(ctx context.Context) error { return t.pending.wait(ctx) }

// arm sets the shard's timer to fire at deadline (s.mu held).
func (s *callShard) arm(deadline int64) {
	s.armed = deadline
	d := time.Duration(deadline - s.t.now())
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.sweep)
		return
	}
	s.timer.Reset(d)
}

// sweep ends every call of the shard whose deadline has passed with
// ErrTimeout and re-arms the timer for the earliest one left.
func (s *callShard) sweep() {
	var due []*pending
	s.mu.Lock()
	now := s.t.now()
	for len(s.heap) > 0 && s.heap[0].deadline <= now {
		p := s.heap[0]
		s.remove(0)
		due = append(due, p)
	}
	for s.flive > 0 && s.fifo[s.fhead].deadline <= now {
		p := s.fifo[s.fhead]
		s.unqueue(p)
		due = append(due, p)
	}
	for _, p := range due {
		s.byCorr.take(p.corr)
	}
	s.armed = 0
	if d := s.earliest(); d != 0 {
		s.arm(d)
	}
	s.mu.Unlock()
	for _, p := range due {
		s.t.pending.done()
		p.finish(result{err: p.timeoutError(), from: p.rid, expired: true})
	}
}

// The deadline queue and heap (s.mu held).

// add files p by its deadline: at the queue's end when it is not due
// before the last one there, else in the heap.
func (s *callShard) add(p *pending) {
	if p.deadline < s.flast && s.flive > 0 {
		s.push(p)
		return
	}
	s.flast = p.deadline
	p.hidx = queueSlot(len(s.fifo))
	s.fifo = append(s.fifo, p)
	s.flive++
}

// queueSlot turns a queue index into a hidx and back.
func queueSlot(i int) int { return -2 - i }

// unlink takes p out of the queue or the heap, wherever it is.
func (s *callShard) unlink(p *pending) {
	if p.hidx >= 0 {
		s.remove(p.hidx)
	} else if p.hidx <= -2 {
		s.unqueue(p)
	}
}

// unqueue removes p from the queue: its slot is cleared and the front
// moves past cleared slots. An empty queue starts again at the start of
// its array; one whose slots are mostly cleared (an old entry holds the
// front) or whose front moved past half of it is compacted.
func (s *callShard) unqueue(p *pending) {
	s.fifo[queueSlot(p.hidx)] = nil
	p.hidx = -1
	s.flive--
	if s.flive == 0 {
		s.fifo, s.fhead = s.fifo[:0], 0
		if cap(s.fifo) > 4096 {
			s.fifo = nil // give a burst's memory back
		}
		return
	}
	for s.fifo[s.fhead] == nil {
		s.fhead++
	}
	if n := len(s.fifo) - s.fhead; s.fhead > len(s.fifo)/2 || (n > 64 && n > 4*s.flive) {
		k := 0
		for _, q := range s.fifo[s.fhead:] {
			if q != nil {
				q.hidx = queueSlot(k)
				s.fifo[k] = q
				k++
			}
		}
		clear(s.fifo[k:])
		s.fifo, s.fhead = s.fifo[:k], 0
	}
}

// earliest is the earliest deadline held; 0 = none.
func (s *callShard) earliest() int64 {
	var d int64
	if s.flive > 0 {
		d = s.fifo[s.fhead].deadline
	}
	if len(s.heap) > 0 && (d == 0 || s.heap[0].deadline < d) {
		d = s.heap[0].deadline
	}
	return d
}

// The heap: each entry knows its index (hidx) so that an entry that ends
// early leaves the heap at once.

func (s *callShard) push(p *pending) {
	p.hidx = len(s.heap)
	s.heap = append(s.heap, p)
	s.up(p.hidx)
}

func (s *callShard) remove(i int) {
	h := s.heap
	last := len(h) - 1
	p := h[i]
	if i != last {
		h[i] = h[last]
		h[i].hidx = i
	}
	h[last] = nil
	s.heap = h[:last]
	if i != last {
		if !s.down(i) {
			s.up(i)
		}
	}
	p.hidx = -1
	if cap(s.heap) > 1024 && len(s.heap) < cap(s.heap)/4 {
		s.heap = append([]*pending(nil), s.heap...) // give a burst's memory back
	}
}

func (s *callShard) up(i int) {
	h := s.heap
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].deadline <= h[i].deadline {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		h[parent].hidx, h[i].hidx = parent, i
		i = parent
	}
}

// down sifts i down; it reports whether i moved.
func (s *callShard) down(i int) bool {
	h := s.heap
	start := i
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].deadline < h[l].deadline {
			m = r
		}
		if h[i].deadline <= h[m].deadline {
			break
		}
		h[i], h[m] = h[m], h[i]
		h[i].hidx, h[m].hidx = i, m
		i = m
	}
	return i > start
}
