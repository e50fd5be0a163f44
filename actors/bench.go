package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// Rate is one measured workload.
type Rate struct {
	MsgsPerSec   float64 // messages (or request round trips) per second
	AllocsPerMsg float64 // heap allocations per message, whole process
}

// BenchResult compares the facade (bounded mailbox + admission) with raw
// protoactor-go (default unbounded mailbox) on one local actor.
type BenchResult struct {
	N              int
	ZlinkTell      Rate
	ProtoTell      Rate
	ZlinkRequest   Rate
	ProtoRequest   Rate
	TellRatio      float64 // ZlinkTell / ProtoTell throughput
	RequestRatio   float64 // ZlinkRequest / ProtoRequest throughput
	TellExtraAlloc float64 // ZlinkTell - ProtoTell allocations per message
}

// String is the one-line summary `make bench` prints.
func (r BenchResult) String() string {
	return fmt.Sprintf("local n=%d tell: zlink %.0f msgs/s %.2f allocs/msg, protoactor %.0f msgs/s %.2f allocs/msg, ratio %.2fx; "+
		"request: zlink %.0f/s %.2f allocs, protoactor %.0f/s %.2f allocs, ratio %.2fx",
		r.N, r.ZlinkTell.MsgsPerSec, r.ZlinkTell.AllocsPerMsg, r.ProtoTell.MsgsPerSec, r.ProtoTell.AllocsPerMsg, r.TellRatio,
		r.ZlinkRequest.MsgsPerSec, r.ZlinkRequest.AllocsPerMsg, r.ProtoRequest.MsgsPerSec, r.ProtoRequest.AllocsPerMsg, r.RequestRatio)
}

// BenchMsg is the message the comparison sends (a shared pointer, so the
// message itself never allocates).
type BenchMsg struct{}

// countActor counts BenchMsg and answers requests with the same pointer.
type countActor struct{ n *atomic.Int64 }

func (a countActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*BenchMsg); ok {
		a.n.Add(1)
		if c.Sender() != nil {
			c.Respond(m)
		}
	}
}

// CompareLocal runs n tells and n requests through both implementations and
// returns their rates and allocations per message. It takes a few seconds
// for n around 1e6; it is meant for `zlink-node bench`, not for tests.
func CompareLocal(n int) (BenchResult, error) {
	if n <= 0 {
		return BenchResult{}, errors.New("zlink: bench: n must be positive")
	}
	res := BenchResult{N: n}
	var err error
	if res.ProtoTell, err = protoTell(n); err != nil {
		return res, err
	}
	if res.ZlinkTell, err = zlinkTell(n); err != nil {
		return res, err
	}
	reqN := max(n/10, 1)
	if res.ProtoRequest, err = protoRequest(reqN); err != nil {
		return res, err
	}
	if res.ZlinkRequest, err = zlinkRequest(reqN); err != nil {
		return res, err
	}
	res.TellRatio = res.ZlinkTell.MsgsPerSec / res.ProtoTell.MsgsPerSec
	res.RequestRatio = res.ZlinkRequest.MsgsPerSec / res.ProtoRequest.MsgsPerSec
	res.TellExtraAlloc = res.ZlinkTell.AllocsPerMsg - res.ProtoTell.AllocsPerMsg
	return res, nil
}

// measure times run and counts the allocations it made, per message.
func measure(n int, run func() error) (Rate, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	if err := run(); err != nil {
		return Rate{}, err
	}
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	return Rate{
		MsgsPerSec:   float64(n) / el.Seconds(),
		AllocsPerMsg: float64(after.Mallocs-before.Mallocs) / float64(n),
	}, nil
}

func waitCount(c *atomic.Int64, n int64) error {
	deadline := time.Now().Add(time.Minute)
	for i := 0; c.Load() < n; i++ {
		if i%4096 == 0 && time.Now().After(deadline) {
			return errors.New("zlink: bench: actor did not count all messages")
		}
		runtime.Gosched()
	}
	return nil
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

func protoTell(n int) (Rate, error) {
	s := benchSystem()
	defer shutdown(s)
	count := &atomic.Int64{}
	pid, err := s.as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return countActor{count} }), "bench-proto")
	if err != nil {
		return Rate{}, err
	}
	defer s.as.Root.Stop(pid)
	msg := &BenchMsg{}
	return measure(n, func() error {
		for range n {
			s.as.Root.Send(pid, msg)
		}
		return waitCount(count, int64(n))
	})
}

func zlinkTell(n int) (Rate, error) {
	s := benchSystem()
	defer shutdown(s)
	count := &atomic.Int64{}
	ref, err := s.Spawn(Spec{Name: "bench-zlink", MaxMessages: int64(n), MaxBytes: 1 << 30,
		Producer: func() actor.Actor { return countActor{count} }})
	if err != nil {
		return Rate{}, err
	}
	msg := &BenchMsg{}
	return measure(n, func() error {
		for range n {
			if err := ref.Tell(msg); err != nil {
				return err
			}
		}
		return waitCount(count, int64(n))
	})
}

func protoRequest(n int) (Rate, error) {
	s := benchSystem()
	defer shutdown(s)
	count := &atomic.Int64{}
	pid, err := s.as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return countActor{count} }), "bench-proto")
	if err != nil {
		return Rate{}, err
	}
	defer s.as.Root.Stop(pid)
	msg := &BenchMsg{}
	return measure(n, func() error {
		for range n {
			if _, err := s.as.Root.RequestFuture(pid, msg, 10*time.Second).Result(); err != nil {
				return err
			}
		}
		return nil
	})
}

func zlinkRequest(n int) (Rate, error) {
	s := benchSystem()
	defer shutdown(s)
	count := &atomic.Int64{}
	ref, err := s.Spawn(Spec{Name: "bench-zlink", MaxMessages: 1024, MaxBytes: 1 << 30,
		Producer: func() actor.Actor { return countActor{count} }})
	if err != nil {
		return Rate{}, err
	}
	msg := &BenchMsg{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return measure(n, func() error {
		for range n {
			if _, err := ref.Request(ctx, msg); err != nil {
				return err
			}
		}
		return nil
	})
}
