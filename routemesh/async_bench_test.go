package routemesh

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
)

// benchPair is a server with an echo Node-direct handler and a client
// connected to it, in one process over loopback.
func benchPair(b *testing.B) (cli *Node) {
	b.Helper()
	start := func(rid string, setup func(*MeshBuilder)) *Node {
		mb := NewMeshBuilder("bench").Listen("tcp://127.0.0.1:0").SetRoutingID(rid)
		setup(mb)
		cfg := mb.Config()
		sys := actors.NewSystem(actors.Config{Name: "b-" + rid})
		n, err := Start(context.Background(), cfg, Deps{System: sys})
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
		mb.HandleDirectRequest("echo", func(c *Context, p []byte) ([]byte, error) { return p, nil })
	})
	cli = start("cli", func(mb *MeshBuilder) { mb.AddPeer(srv.Endpoint(), "srv") })
	for deadline := time.Now().Add(10 * time.Second); cli.load().links["srv"] == nil; {
		if time.Now().After(deadline) {
			b.Fatal("no connection")
		}
		time.Sleep(time.Millisecond)
	}
	return cli
}

// The blocking call (one goroutine waits per call) beside the
// asynchronous one (the reply arrives as a message in an actor's
// mailbox), each with 100 calls in flight.
func BenchmarkNode_CallNode(b *testing.B) {
	cli := benchPair(b)
	payload := make([]byte, 64)
	const window = 100
	b.Run("blocking", func(b *testing.B) {
		b.ReportAllocs()
		sem := make(chan struct{}, window)
		var wg sync.WaitGroup
		ctx := context.Background()
		for b.Loop() {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if _, err := cli.CallNode(ctx, "srv", "echo", payload); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	})
	b.Run("async", func(b *testing.B) {
		b.ReportAllocs()
		sys := actors.NewSystem(actors.Config{Name: "b-caller"})
		defer func() { _ = sys.Shutdown(context.Background()) }()
		credits := make(chan struct{}, window)
		var wg sync.WaitGroup
		ref, err := sys.Spawn(actors.Spec{Name: "caller", MaxMessages: 2 * window, Producer: func() actors.Actor {
			return actors.ReceiveFunc(func(c *actors.Context) {
				if r, ok := c.Message().(*Reply); ok {
					if r.Err != nil {
						b.Error(r.Err)
					}
					<-credits
					wg.Done()
				}
			})
		}})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			credits <- struct{}{}
			wg.Add(1)
			if err := cli.CallNodeAsync("srv", "echo", payload, 5*time.Second, ref.ReplyTo(), nil); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
	})
}
