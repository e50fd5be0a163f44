package otelzlink_test

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/otelzlink"
	"github.com/zlink-go/zlink/routemesh"
)

// Turning tracing on: one Tracer per MeshNode, on the application's
// TracerProvider (here the SDK's, with the exporter of your choice). A
// span in the caller's context is the parent of the call's span; a
// handler's Context carries the handler's span on to the calls it makes.
func Example() {
	tp := sdktrace.NewTracerProvider( /* sdktrace.WithBatcher(exporter) */ )
	defer func() { _ = tp.Shutdown(context.Background()) }()

	opts := zlink.NewOptions()
	opts.AddRouteMesh("game").
		SetTracer(otelzlink.New(tp)).
		Channel("match").Server().
		HandleRequest("join", func(c *routemesh.Context, p []byte) ([]byte, error) {
			// c continues the caller's trace: calls made with it are its children.
			return c.Node().Call(c, "seats", "take", p)
		})
	_ = opts // zlink.Start(ctx, opts) as usual
}
