package otelzlink_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// BenchmarkOTel_Call is one channel call at a time over loopback between
// two nodes (both nodes' allocations), with tracing off and on through the
// OpenTelemetry SDK (every span sampled, handed to an exporter that drops
// it): what a traced call costs with a real TracerProvider.
func BenchmarkOTel_Call(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		var tp trace.TracerProvider
		if on {
			name = "on"
			sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
			b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
			tp = sdk
		}
		b.Run(name, func(b *testing.B) {
			store := location.NewMemory()
			start(b, store, "srv", tp, func(mb *routemesh.MeshBuilder) {
				mb.Channel("echo").Server().HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
			})
			cli := start(b, store, "cli", tp, func(mb *routemesh.MeshBuilder) { mb.Channel("echo").Client() })
			if err := cli.WaitReady(ctxT(b, 10*time.Second), "echo"); err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 64)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cli.Call(ctx, "echo", "echo", payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
