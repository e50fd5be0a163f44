package spot

import (
	"sync"
	"testing"
	"time"
)

// A store step never waits behind another: with every worker busy, a new
// step starts on a new worker at once.
func TestStoreWorkers_NeverQueueBehindABusyStep(t *testing.T) {
	s := newStoreWorkers()
	defer s.stop()
	release := make(chan struct{})
	started := make(chan int, 8)
	for i := range 8 {
		if !s.run(func() { started <- i; <-release }) {
			t.Fatal("refused before stop")
		}
	}
	seen := map[int]bool{}
	for range 8 {
		select {
		case i := <-started:
			seen[i] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 8 steps started while the others were busy", len(seen))
		}
	}
	close(release)
}

// A finished worker parks and takes the next step: after a step ends,
// the next one runs on the same goroutine (no new one is started).
func TestStoreWorkers_ReuseAParkedWorker(t *testing.T) {
	s := newStoreWorkers()
	defer s.stop()
	done := make(chan struct{})
	s.run(func() { close(done) })
	<-done
	waitParked(t, s, 1)
	done2 := make(chan struct{})
	s.run(func() { close(done2) })
	<-done2
	waitParked(t, s, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starts != 1 {
		t.Fatalf("%d workers started for two steps one after the other, want 1", s.starts)
	}
}

// stop waits for the steps in flight, ends the parked workers and refuses
// new steps.
func TestStoreWorkers_StopWaitsAndRefuses(t *testing.T) {
	s := newStoreWorkers()
	var mu sync.Mutex
	finished := false
	release := make(chan struct{})
	s.run(func() {})
	waitParked(t, s, 1)
	s.run(func() { <-release; mu.Lock(); finished = true; mu.Unlock() })
	stopped := make(chan struct{})
	go func() { s.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned with a step in flight")
	case <-time.After(50 * time.Millisecond): // stop must still be waiting
	}
	close(release)
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if !finished {
		t.Fatal("stop returned before the step finished")
	}
	if s.run(func() { t.Error("ran after stop") }) {
		t.Fatal("a step was taken after stop")
	}
}

func waitParked(t *testing.T, s *storeWorkers, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		p := len(s.parked)
		s.mu.Unlock()
		if p == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("parked %d, want %d", p, n)
		}
		time.Sleep(time.Millisecond)
	}
}
