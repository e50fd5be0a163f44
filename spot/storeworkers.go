package spot

import (
	"slices"
	"sync"
	"time"
)

// storeWorkers runs the runtime's store steps (claims, releases, state
// writes: calls that wait on the store) on goroutines that outlive one
// step, so a step starts on a stack already grown by the store client
// instead of growing a new goroutine's stack each time (measured in
// `bench spots-redis`). It is elastic: a step is handed to a parked worker
// or, when none is parked, to a new one — a step never waits behind
// another step. A worker parked longer than storeWorkerIdle ends, and at
// most storeWorkersParked stay parked. A leaf structure: mu guards only
// it.
type storeWorkers struct {
	mu     sync.Mutex
	done   bool
	parked []*storeWorker // a stack: the last parked on top
	starts int            // workers started (tests)
	wg     sync.WaitGroup
}

// storeWorker is one worker's slot: the step it is handed (cap 1, so a
// hand-off never blocks), nil to end.
type storeWorker struct{ next chan func() }

const (
	storeWorkerIdle    = 5 * time.Second
	storeWorkersParked = 256
)

func newStoreWorkers() *storeWorkers { return &storeWorkers{} }

// run runs fn on a worker; after stop it refuses (false).
func (s *storeWorkers) run(fn func()) bool {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return false
	}
	if n := len(s.parked); n > 0 {
		w := s.parked[n-1]
		s.parked = s.parked[:n-1]
		s.mu.Unlock()
		w.next <- fn
		return true
	}
	s.wg.Add(1)
	s.starts++
	s.mu.Unlock()
	go s.worker(fn)
	return true
}

func (s *storeWorkers) worker(fn func()) {
	defer s.wg.Done()
	w := &storeWorker{next: make(chan func(), 1)}
	var idle *time.Timer
	for fn != nil {
		fn()
		if !s.park(w) {
			return
		}
		if idle == nil {
			idle = time.NewTimer(storeWorkerIdle)
		} else {
			idle.Reset(storeWorkerIdle)
		}
		select {
		case fn = <-w.next:
		case <-idle.C:
			if s.leave(w) {
				return
			}
			fn = <-w.next // taken meanwhile: its step is on the way
		}
	}
}

// park puts w on the stack unless enough are parked or the set stopped.
func (s *storeWorkers) park(w *storeWorker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || len(s.parked) >= storeWorkersParked {
		return false
	}
	s.parked = append(s.parked, w)
	return true
}

// leave takes an idle w off the stack; false when run took it first.
func (s *storeWorkers) leave(w *storeWorker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.parked, w)
	if i < 0 {
		return false
	}
	s.parked = slices.Delete(s.parked, i, i+1)
	return true
}

// stop refuses new steps, ends the parked workers and waits for the steps
// in flight.
func (s *storeWorkers) stop() {
	s.mu.Lock()
	s.done = true
	parked := s.parked
	s.parked = nil
	s.mu.Unlock()
	for _, w := range parked {
		w.next <- nil
	}
	s.wg.Wait()
}
