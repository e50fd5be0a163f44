package routemesh

import (
	"context"
	"testing"
)

// nopTracer is the cheapest Tracer: a fixed 25-byte trace context (the
// size of a W3C one) and spans that record nothing, so the benchmark
// measures what the runtime adds for tracing, not a tracing library.
type nopTracer struct{ tc string }

type nopSpan struct{}

func (nopSpan) End(error) {}

func (t nopTracer) StartCall(context.Context, SpanInfo) (Span, string) { return nopSpan{}, t.tc }

func (nopTracer) StartHandler(ctx context.Context, _ string, _ SpanInfo) (context.Context, Span) {
	return ctx, nopSpan{}
}

// BenchmarkTrace_CallLockstep is BenchmarkHotPath_CallLockstep (a channel
// call, one at a time, both nodes' allocations) with tracing off and on
// (a Tracer that allocates nothing): off must cost what the hot path
// costs without the hook.
func BenchmarkTrace_CallLockstep(b *testing.B) {
	for _, tc := range []struct {
		name string
		tr   Tracer
	}{{"off", nil}, {"on", nopTracer{tc: string(make([]byte, 25))}}} {
		b.Run(tc.name, func(b *testing.B) {
			cli, _ := tracedPair(b, tc.tr, tc.tr, nil)
			benchLockstep(b, cli)
		})
	}
}

// BenchmarkTrace_CallFuture is BenchmarkHotPath_CallFuture (1000 futures
// in flight) with tracing off and on.
func BenchmarkTrace_CallFuture(b *testing.B) {
	for _, tc := range []struct {
		name string
		tr   Tracer
	}{{"off", nil}, {"on", nopTracer{tc: string(make([]byte, 25))}}} {
		b.Run(tc.name, func(b *testing.B) {
			cli, _ := tracedPair(b, tc.tr, tc.tr, nil)
			benchFutureWindow(b, cli)
		})
	}
}
