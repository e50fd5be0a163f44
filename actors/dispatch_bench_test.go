package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// stackDepth uses about n KiB of stack, as an actor turn several calls
// deep does (the part of a turn a new goroutine pays for in stack growth).
//
//go:noinline
func stackDepth(n int) byte {
	var buf [1024]byte
	buf[n%len(buf)] = byte(n)
	if n <= 1 {
		return buf[0]
	}
	return stackDepth(n-1) + buf[n%len(buf)]
}

// BenchmarkDispatch_Schedule: bursts of schedules, each a short turn that
// uses 16 KiB of stack, on protoactor's default dispatcher (a goroutine
// per schedule) and on a Pool.
func BenchmarkDispatch_Schedule(b *testing.B) {
	for _, d := range []struct {
		name string
		make func() (actor.Dispatcher, func())
	}{
		{"impl=protoactor", func() (actor.Dispatcher, func()) { return actor.NewDefaultDispatcher(300), func() {} }},
		{"impl=pool/idle=4", func() (actor.Dispatcher, func()) { p := newPool(poolConfig{MaxIdle: 4}); return p, p.Close }},
		{"impl=pool/idle=1024", func() (actor.Dispatcher, func()) { p := newPool(poolConfig{MaxIdle: 1024}); return p, p.Close }},
	} {
		for _, burst := range []int{1, 64, 1024} {
			b.Run(fmt.Sprintf("%s/burst=%d", d.name, burst), func(b *testing.B) {
				disp, done := d.make()
				defer done()
				var wg sync.WaitGroup
				var sink atomic.Int32
				fn := func() { sink.Add(int32(stackDepth(16))); wg.Done() }
				b.ReportAllocs()
				for b.Loop() {
					wg.Add(burst)
					for range burst {
						disp.Schedule(fn)
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*burst), "ns/schedule")
			})
		}
	}
}

// BenchmarkDispatch_Actors: 1,000 actors each told one message per round
// (the timer clock's pattern), pooled and not.
func BenchmarkDispatch_Actors(b *testing.B) {
	msg := &benchMsg{}
	for _, pooled := range []bool{false, true} {
		b.Run(fmt.Sprintf("pooled=%v", pooled), func(b *testing.B) {
			s := benchSystem()
			defer shutdown(s)
			const n = 1000
			count := &atomic.Int64{}
			refs := make([]*Ref, n)
			for i := range refs {
				ref, err := s.Spawn(Spec{Name: fmt.Sprint("a", i), Pooled: pooled, Compact: true,
					Producer: func() Actor { return countActor{count} }})
				if err != nil {
					b.Fatal(err)
				}
				refs[i] = ref
			}
			b.ReportAllocs()
			var sent int64
			for b.Loop() {
				for _, r := range refs {
					if err := r.Tell(msg); err != nil {
						b.Fatal(err)
					}
				}
				sent += n
				waitCountB(b, count, sent)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent), "ns/msg")
		})
	}
}

// BenchmarkDispatch_Request: lockstep requests to one actor (its mailbox
// is scheduled once per request), pooled and not.
func BenchmarkDispatch_Request(b *testing.B) {
	msg := &benchMsg{}
	for _, pooled := range []bool{false, true} {
		b.Run(fmt.Sprintf("pooled=%v", pooled), func(b *testing.B) {
			s := benchSystem()
			defer shutdown(s)
			count := &atomic.Int64{}
			ref, err := s.Spawn(Spec{Name: "r", Pooled: pooled, MaxMessages: 1024,
				Producer: func() Actor { return countActor{count} }})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ref.Request(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
