package routemesh

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// channelPair starts a Server of channel "echo" and a Client connected to
// it, with TLS when ca is set, and returns the client once the channel has
// a target.
func channelPair(b *testing.B, name string, ca *tlstest.CA) *Node {
	b.Helper()
	start := func(rid string, setup func(*MeshBuilder)) *Node {
		mb := NewMeshBuilder("bench-" + name).SetRoutingID(rid)
		if ca != nil {
			mb.SetTLS(tlsFiles(b, ca, testMeshID))
		}
		setup(mb)
		sys := actors.NewSystem(actors.Config{Name: "b-" + name + "-" + rid})
		n, err := Start(context.Background(), mb.Config(), Deps{System: sys})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = n.Stop(context.Background())
			_ = sys.Shutdown(context.Background())
		})
		return n
	}
	srv := start("srv", func(mb *MeshBuilder) {
		mb.Channel("echo").Server().HandleRequest("echo", func(c *Context, p []byte) ([]byte, error) { return p, nil })
	})
	cli := start("cli", func(mb *MeshBuilder) { mb.Channel("echo").Client().AddPeer(srv.Endpoint(), "srv") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitReady(ctx, "echo"); err != nil {
		b.Fatal(err)
	}
	return cli
}

// A channel request over TLS beside the same request over plaintext, in
// one run: "window" keeps 64 requests in flight (throughput), "ratio"
// alternates single requests on both (latency) and reports tls/plain.
func BenchmarkChannelCall_TLSvsPlain(b *testing.B) {
	ca := tlstest.NewCA(b, "bench CA")
	nodes := map[string]*Node{"plain": channelPair(b, "plain", nil), "tls": channelPair(b, "tls", ca)}
	payload := make([]byte, 256)
	ctx := context.Background()
	call := func(b *testing.B, n *Node) {
		if _, err := n.Call(ctx, "echo", "echo", payload); err != nil {
			b.Error(err)
		}
	}
	for _, name := range []string{"plain", "tls"} {
		b.Run("window/"+name, func(b *testing.B) {
			b.ReportAllocs()
			n := nodes[name]
			sem := make(chan struct{}, 64)
			var wg sync.WaitGroup
			for b.Loop() {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					call(b, n)
				}()
			}
			wg.Wait()
		})
	}
	b.Run("ratio", func(b *testing.B) {
		b.ReportAllocs()
		var plain, tls time.Duration
		for b.Loop() {
			t0 := time.Now()
			call(b, nodes["plain"])
			t1 := time.Now()
			call(b, nodes["tls"])
			plain += t1.Sub(t0)
			tls += time.Since(t1)
		}
		if plain > 0 {
			b.ReportMetric(float64(tls)/float64(plain), "tls/plain")
			b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/call")
			b.ReportMetric(float64(tls.Nanoseconds())/float64(b.N), "tls-ns/call")
		}
	})
}
