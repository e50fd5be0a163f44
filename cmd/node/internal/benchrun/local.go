package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
)

func init() {
	register(Bench{
		Name:  "local",
		About: "local tell and request through actors/ (bounded mailbox) vs raw protoactor-go (default mailbox)",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			n := 1_000_000
			if quick {
				n = 100_000
			}
			// Three rounds, median reported: protoactor's own speed swings
			// between runs on a 2-core machine; both sides get the same
			// treatment in every round.
			rs := make([]LocalResult, 0, 3)
			for range 3 {
				r, err := CompareLocal(n)
				if err != nil {
					return err
				}
				fmt.Fprintln(w, r.String())
				rs = append(rs, r)
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].TellRatio < rs[j].TellRatio })
			med := rs[1]
			fmt.Fprintf(w, "ratio (median of 3) tell=%.2fx request=%.2fx extra_allocs_per_msg=%.2f (goal: >= 0.80x, <= 1 extra alloc)\n",
				med.TellRatio, med.RequestRatio, med.TellExtraAlloc)
			return nil
		},
	})
}

// Rate is one measured workload.
type Rate struct {
	MsgsPerSec   float64 // messages (or request round trips) per second
	AllocsPerMsg float64 // heap allocations per message, whole process
}

// LocalResult compares the actors/ facade (bounded mailbox + admission)
// with raw protoactor-go (default unbounded mailbox) on one local actor.
type LocalResult struct {
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
func (r LocalResult) String() string {
	return fmt.Sprintf("local n=%d tell: zlink %.0f msgs/s %.2f allocs/msg, protoactor %.0f msgs/s %.2f allocs/msg, ratio %.2fx; "+
		"request: zlink %.0f/s %.2f allocs, protoactor %.0f/s %.2f allocs, ratio %.2fx",
		r.N, r.ZlinkTell.MsgsPerSec, r.ZlinkTell.AllocsPerMsg, r.ProtoTell.MsgsPerSec, r.ProtoTell.AllocsPerMsg, r.TellRatio,
		r.ZlinkRequest.MsgsPerSec, r.ZlinkRequest.AllocsPerMsg, r.ProtoRequest.MsgsPerSec, r.ProtoRequest.AllocsPerMsg, r.RequestRatio)
}

// benchMsg is the message the comparison sends (a shared pointer, so the
// message itself never allocates).
type benchMsg struct{}

// countActor counts benchMsg and answers requests with the same pointer
// (raw protoactor); zcountActor is the same actor on ZLink's actors.
type countActor struct{ n *atomic.Int64 }

func (a countActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*benchMsg); ok {
		a.n.Add(1)
		if c.Sender() != nil {
			c.Respond(m)
		}
	}
}

type zcountActor struct{ n *atomic.Int64 }

func (a zcountActor) Receive(c *actors.Context) {
	if m, ok := c.Message().(*benchMsg); ok {
		a.n.Add(1)
		c.Respond(m)
	}
}

// CompareLocal runs n tells and n/10 requests through both implementations
// and returns their rates and allocations per message. It takes a few
// seconds for n around 1e6.
func CompareLocal(n int) (LocalResult, error) {
	if n <= 0 {
		return LocalResult{}, errors.New("zlink: bench: n must be positive")
	}
	res := LocalResult{N: n}
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

// waitCount spins until the actor has counted n messages (the producer
// side of a throughput run; a channel per message would be measured too).
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

// zlinkSystem is the facade side: an actors.System with logging off.
func zlinkSystem() *actors.System {
	cfg := actors.DefaultConfig()
	cfg.Logger = zerolog.Nop()
	return actors.NewSystem(cfg)
}

func shutdownZlink(s *actors.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
}

// protoSystem is the raw baseline: a protoactor ActorSystem of its own,
// with its default mailbox and logging discarded.
func protoSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

func protoTell(n int) (Rate, error) {
	as := protoSystem()
	defer as.Shutdown()
	count := &atomic.Int64{}
	pid, err := as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return countActor{count} }), "bench-proto")
	if err != nil {
		return Rate{}, err
	}
	defer as.Root.Stop(pid)
	msg := &benchMsg{}
	return measure(n, func() error {
		for range n {
			as.Root.Send(pid, msg)
		}
		return waitCount(count, int64(n))
	})
}

func zlinkTell(n int) (Rate, error) {
	s := zlinkSystem()
	defer shutdownZlink(s)
	count := &atomic.Int64{}
	ref, err := s.Spawn(actors.Spec{Name: "bench-zlink", MaxMessages: int64(n), MaxBytes: 1 << 30,
		Producer: func() actors.Actor { return zcountActor{count} }})
	if err != nil {
		return Rate{}, err
	}
	msg := &benchMsg{}
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
	as := protoSystem()
	defer as.Shutdown()
	count := &atomic.Int64{}
	pid, err := as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return countActor{count} }), "bench-proto")
	if err != nil {
		return Rate{}, err
	}
	defer as.Root.Stop(pid)
	msg := &benchMsg{}
	return measure(n, func() error {
		for range n {
			if _, err := as.Root.RequestFuture(pid, msg, 10*time.Second).Result(); err != nil {
				return err
			}
		}
		return nil
	})
}

func zlinkRequest(n int) (Rate, error) {
	s := zlinkSystem()
	defer shutdownZlink(s)
	count := &atomic.Int64{}
	ref, err := s.Spawn(actors.Spec{Name: "bench-zlink", MaxMessages: 1024, MaxBytes: 1 << 30,
		Producer: func() actors.Actor { return zcountActor{count} }})
	if err != nil {
		return Rate{}, err
	}
	msg := &benchMsg{}
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
