package routemesh

import (
	"context"
	"sync"
)

// result is the one terminal outcome of a call.
type result struct {
	payload  []byte
	err      error
	from     string            // RID that served it
	headroom map[string]uint32 // what the server reported (replies)
}

// pending is one request waiting for its terminal result.
type pending struct {
	done chan result // buffered 1: completion never blocks
	pipe string      // pipe the request went out on ("" = local)
	rid  string
	// notify, when set (an asynchronous call), receives the result instead
	// of done; it runs on the completing goroutine and must not block.
	notify func(result)
}

// finish hands r to whoever waits: exactly once, by whoever removed the
// entry from the table.
func (p *pending) finish(r result) {
	if p.notify != nil {
		p.notify(r)
		return
	}
	p.done <- r
}

// callTable correlates requests with replies and guarantees exactly one
// terminal result per request: whoever removes the entry delivers. It is a
// small leaf structure guarded by a mutex (sharded to keep contention low),
// because every call would otherwise pay two actor hops.
type callTable struct {
	shards  [16]callShard
	pending workCount // calls registered and not yet ended (Stop waits on it)
}

type callShard struct {
	mu     sync.Mutex
	byCorr map[uint64]*pending
	byPipe map[string]map[uint64]struct{}
}

func newCallTable() *callTable {
	t := &callTable{}
	t.pending.init()
	for i := range t.shards {
		t.shards[i].byCorr = map[uint64]*pending{}
		t.shards[i].byPipe = map[string]map[uint64]struct{}{}
	}
	return t
}

var pendingPool = sync.Pool{New: func() any { return &pending{done: make(chan result, 1)} }}

func (t *callTable) shard(corr uint64) *callShard { return &t.shards[corr&15] }

// add registers corr as pending on pipe.
func (t *callTable) add(corr uint64, pipe, rid string) *pending {
	p := pendingPool.Get().(*pending)
	p.pipe, p.rid = pipe, rid
	t.insert(corr, p)
	return p
}

// addNotify registers an asynchronous call: its result goes to notify.
// Such an entry is not pooled.
func (t *callTable) addNotify(corr uint64, pipe, rid string, notify func(result)) *pending {
	p := &pending{pipe: pipe, rid: rid, notify: notify}
	t.insert(corr, p)
	return p
}

func (t *callTable) insert(corr uint64, p *pending) {
	pipe := p.pipe
	t.pending.add()
	s := t.shard(corr)
	s.mu.Lock()
	s.byCorr[corr] = p
	set := s.byPipe[pipe]
	if set == nil {
		set = map[uint64]struct{}{}
		s.byPipe[pipe] = set
	}
	set[corr] = struct{}{}
	s.mu.Unlock()
}

// take removes corr and returns its entry, or nil if it already ended.
func (t *callTable) take(corr uint64) *pending {
	s := t.shard(corr)
	s.mu.Lock()
	p := s.byCorr[corr]
	if p != nil {
		delete(s.byCorr, corr)
		if set := s.byPipe[p.pipe]; set != nil {
			delete(set, corr)
			if len(set) == 0 {
				delete(s.byPipe, p.pipe)
			}
		}
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
	pendingPool.Put(p)
}

// failPipe ends every call pending on pipe with err (ErrPeerLost).
func (t *callTable) failPipe(pipe string, err error) int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		set := s.byPipe[pipe]
		delete(s.byPipe, pipe)
		var ps []*pending
		for corr := range set {
			if p := s.byCorr[corr]; p != nil {
				delete(s.byCorr, corr)
				ps = append(ps, p)
			}
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
		ps := make([]*pending, 0, len(s.byCorr))
		for corr, p := range s.byCorr {
			delete(s.byCorr, corr)
			ps = append(ps, p)
		}
		clear(s.byPipe)
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
