package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

func BenchmarkActors_Tell(b *testing.B) {
	msg := &BenchMsg{}
	b.Run("impl=zlink", func(b *testing.B) {
		s := benchSystem()
		defer shutdown(s)
		count := &atomic.Int64{}
		ref, err := s.Spawn(Spec{Name: "t", MaxMessages: 1 << 22, MaxBytes: 1 << 30,
			Producer: func() actor.Actor { return countActor{count} }})
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
		s := benchSystem()
		defer shutdown(s)
		count := &atomic.Int64{}
		pid, err := s.as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return countActor{count} }), "t")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := time.Now()
		var sent int64
		for b.Loop() {
			s.as.Root.Send(pid, msg)
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
	msg := &BenchMsg{}
	b.Run("impl=zlink", func(b *testing.B) {
		s := benchSystem()
		defer shutdown(s)
		count := &atomic.Int64{}
		ref, err := s.Spawn(Spec{Name: "r", MaxMessages: 1024, MaxBytes: 1 << 30,
			Producer: func() actor.Actor { return countActor{count} }})
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
		s := benchSystem()
		defer shutdown(s)
		count := &atomic.Int64{}
		pid, err := s.as.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return countActor{count} }), "r")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := time.Now()
		var n int64
		for b.Loop() {
			if _, err := s.as.Root.RequestFuture(pid, msg, time.Hour).Result(); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
	})
}

func TestCompareLocal(t *testing.T) {
	r, err := CompareLocal(2000)
	if err != nil {
		t.Fatal(err)
	}
	if r.ZlinkTell.MsgsPerSec <= 0 || r.ProtoTell.MsgsPerSec <= 0 || r.ZlinkRequest.MsgsPerSec <= 0 ||
		r.ProtoRequest.MsgsPerSec <= 0 || r.TellRatio <= 0 {
		t.Fatalf("result %+v", r)
	}
	t.Log(r)
}
