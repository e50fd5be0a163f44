package actors

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// benchMsg is the message the benchmarks send (a shared pointer, so the
// message itself never allocates).
type benchMsg struct{}

// countActor counts benchMsg and answers requests with the same pointer,
// through this package's Actor interface.
type countActor struct{ n *atomic.Int64 }

func (a countActor) Receive(c *Context) {
	if m, ok := c.Message().(*benchMsg); ok {
		a.n.Add(1)
		c.Respond(m)
	}
}

// protoCountActor is countActor for the raw protoactor baseline.
type protoCountActor struct{ n *atomic.Int64 }

func (a protoCountActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*benchMsg); ok {
		a.n.Add(1)
		if c.Sender() != nil {
			c.Respond(m)
		}
	}
}

func benchSystem() *System {
	cfg := DefaultConfig()
	cfg.Logger = zerolog.Nop()
	return NewSystem(cfg)
}

func shutdown(s *System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
}

// protoSystem is the raw baseline: a protoactor ActorSystem of its own with
// the default mailbox, logging discarded.
func protoSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

// waitCount spins until the actor has counted n messages.
func waitCount(c *atomic.Int64, n int64) error {
	deadline := time.Now().Add(time.Minute)
	for i := 0; c.Load() < n; i++ {
		if i%4096 == 0 && time.Now().After(deadline) {
			return errors.New("bench: actor did not count all messages")
		}
		runtime.Gosched()
	}
	return nil
}

// BenchmarkActors_Tell is Tell→Receive through the Actor interface
// (impl=zlink), beside raw protoactor-go: the adapter must add no
// allocation per message (docs/benchmarks.md).
func BenchmarkActors_Tell(b *testing.B) {
	msg := &benchMsg{}
	b.Run("impl=zlink", func(b *testing.B) {
		s := benchSystem()
		defer shutdown(s)
		count := &atomic.Int64{}
		ref, err := s.Spawn(Spec{Name: "t", MaxMessages: 1 << 22, MaxBytes: 1 << 30,
			Producer: func() Actor { return countActor{count} }})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := time.Now()
		var sent int64
		for b.Loop() {
			for ref.Tell(msg) != nil { // budget full: let the actor catch up
				waitCountB(b, count, sent-1<<21)
			}
			sent++
		}
		waitCountB(b, count, sent)
		b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("impl=protoactor", func(b *testing.B) {
		as := protoSystem()
		defer as.Shutdown()
		count := &atomic.Int64{}
		pid, err := as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return protoCountActor{count} }), "t")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := time.Now()
		var sent int64
		for b.Loop() {
			as.Root.Send(pid, msg)
			sent++
		}
		waitCountB(b, count, sent)
		b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "msgs/s")
	})
}

func waitCountB(b *testing.B, c *atomic.Int64, n int64) {
	if err := waitCount(c, n); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkActors_Request(b *testing.B) {
	msg := &benchMsg{}
	b.Run("impl=zlink", func(b *testing.B) {
		s := benchSystem()
		defer shutdown(s)
		count := &atomic.Int64{}
		ref, err := s.Spawn(Spec{Name: "r", MaxMessages: 1024, MaxBytes: 1 << 30,
			Producer: func() Actor { return countActor{count} }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		b.ReportAllocs()
		start := time.Now()
		var n int64
		for b.Loop() {
			if _, err := ref.Request(ctx, msg); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("impl=protoactor", func(b *testing.B) {
		as := protoSystem()
		defer as.Shutdown()
		count := &atomic.Int64{}
		pid, err := as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return protoCountActor{count} }), "r")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := time.Now()
		var n int64
		for b.Loop() {
			if _, err := as.Root.RequestFuture(pid, msg, time.Hour).Result(); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
	})
}
