package actors_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zlink-go/zlink/actors"
)

func TestPool_RunsEveryScheduleExactlyOnce(t *testing.T) {
	p := actors.NewPool(actors.PoolConfig{MaxIdle: 3})
	defer p.Close()
	const n = 20000
	counts := make([]atomic.Int32, n)
	var done sync.WaitGroup
	done.Add(n)
	var senders sync.WaitGroup
	for g := range 4 { // schedules from several goroutines, as mailboxes do
		senders.Add(1)
		go func() {
			defer senders.Done()
			for i := g; i < n; i += 4 {
				p.Schedule(func() { counts[i].Add(1); done.Done() })
			}
		}()
	}
	senders.Wait()
	done.Wait()
	for i := range counts {
		if c := counts[i].Load(); c != 1 {
			t.Fatalf("fn %d ran %d times", i, c)
		}
	}
}

func TestPool_BlockedScheduleHoldsBackNothing(t *testing.T) {
	p := actors.NewPool(actors.PoolConfig{MaxIdle: 1})
	defer p.Close()
	release := make(chan struct{})
	blocked := make(chan struct{})
	p.Schedule(func() { close(blocked); <-release })
	<-blocked
	// Every worker that exists is busy or parked; with the only idle slot
	// taken, more schedules must still run while the first one blocks.
	var ran sync.WaitGroup
	for range 100 {
		ran.Add(1)
		p.Schedule(func() { ran.Done() })
	}
	ran.Wait()
	close(release)
}

func TestPool_IdleWorkersExit(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	p := actors.NewPool(actors.PoolConfig{MaxIdle: 8, Idle: 10 * time.Millisecond})
	defer p.Close()
	var ran sync.WaitGroup
	release := make(chan struct{})
	for range 32 { // 32 workers busy at once: at most 8 stay parked after
		ran.Add(1)
		p.Schedule(func() { <-release; ran.Done() })
	}
	if w := p.Workers(); w != 32 {
		t.Fatalf("%d workers for 32 blocked schedules, want 32", w)
	}
	close(release)
	ran.Wait()
	waitFor(t, "idle workers past MaxIdle to exit", func() bool { return p.Workers() <= 8 })
	waitFor(t, "every idle worker to exit", func() bool { return p.Workers() == 0 })
	goleak.VerifyNone(t, ignore)
}

func TestPool_CloseEndsParkedWorkers(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	p := actors.NewPool(actors.PoolConfig{Idle: time.Hour})
	var ran sync.WaitGroup
	for range 4 {
		ran.Add(1)
		p.Schedule(func() { ran.Done() })
	}
	ran.Wait()
	p.Close()
	p.Close() // idempotent
	waitFor(t, "parked workers to exit", func() bool { return p.Workers() == 0 })
	// After Close a schedule still runs (on a goroutine of its own).
	done := make(chan struct{})
	p.Schedule(func() { close(done) })
	<-done
	goleak.VerifyNone(t, ignore)
}

// A pooled actor behaves as any other: its messages run in order, one at a
// time, and it stops with the System.
func TestSpawn_PooledActor(t *testing.T) {
	s := newSystem(t)
	var mu sync.Mutex
	var got []int
	done := make(chan struct{})
	ref, err := s.Spawn(actors.Spec{Name: "pooled", Pooled: true, Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			if v, ok := c.Message().(int); ok {
				mu.Lock()
				got = append(got, v)
				n := len(got)
				mu.Unlock()
				if n == 1000 {
					close(done)
				}
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := ref.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	for i, v := range got {
		if v != i {
			t.Fatalf("message %d is %d: out of order", i, v)
		}
	}
}
