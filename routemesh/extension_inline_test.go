package routemesh

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
)

// A deferred Node-direct handler (the Spot runtime's door) does not wait
// behind the direct owner: with every handler slot held and the owner's
// mailbox budget spent, ordinary Node-direct requests are refused with
// ErrBusy while deferred requests are still taken and answered.
func TestExtension_DeferredRequestsDoNotWaitBehindTheDirectOwner(t *testing.T) {
	release := make(chan struct{})
	b := NewMeshBuilder("m").SetRoutingID("x").SetLogger(testLog(t)).SetTimeouts(time.Second, 2*time.Second).
		ConfigureRouterSocket(SocketConfig{MailboxMessageBudget: 4}).SetHandlerConcurrency(1).
		HandleDirectRequest("slow", func(c *Context, _ []byte) ([]byte, error) {
			select {
			case <-release:
				return []byte("ok"), nil
			case <-c.Done():
				return nil, c.Err()
			}
		}).
		HandleDirectDeferred("later", func(r *Request) { r.Reply(append([]byte("done:"), r.Payload...)) })
	sys := actors.NewSystem(actors.Config{Name: "t-inline"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Start(ctx, b.Config(), Deps{System: sys, transport: memnet.New(1).Host("x")})
	if err != nil {
		_ = sys.Shutdown(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = n.Stop(sctx)
		_ = sys.Shutdown(sctx)
	})

	// Fill the direct owner: one handler running, the rest queued with the
	// owner's budget, until a slow request is refused.
	var slow []*Future
	busy := false
	for i := 0; i < 64 && !busy; i++ {
		f := n.CallNodeFuture(n.RID(), "slow", nil, 10*time.Second)
		slow = append(slow, f)
		select {
		case <-f.Done():
			_, err := f.Wait(ctx)
			if !errors.Is(err, zerr.ErrBusy) {
				t.Fatalf("slow request %d ended before its release: %v", i, err)
			}
			busy = true
		default:
		}
	}
	if !busy {
		t.Fatal("64 slow requests never filled the direct owner (budget 4, one handler)")
	}

	for i := range 50 {
		out, err := n.CallNode(ctx, n.RID(), "later", []byte{byte('a' + i%26)})
		if err != nil || string(out) != "done:"+string(rune('a'+i%26)) {
			t.Fatalf("deferred request %d with the direct owner full: %q %v", i, out, err)
		}
	}

	close(release)
	for i, f := range slow[:len(slow)-1] {
		if out, err := f.Wait(ctx); err != nil || string(out) != "ok" {
			t.Fatalf("slow request %d after release: %q %v", i, out, err)
		}
	}
}
