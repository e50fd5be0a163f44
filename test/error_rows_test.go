package test

// The error tables of README.md and docs/spots.md say, for each error,
// whether the handler ran. These tests hold the rows that say "did not
// run" (a caller may retry them without running anything twice) and the
// ones that say "ran", by counting handler invocations. The rows that say
// "unknown" promise nothing a count could check; the tests named in the
// tables show when they happen.

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// ErrBusy (a full owner mailbox): the refused call never ran. Every call
// that was admitted ran once, and no other.
func TestErrorRows_BusyDidNotRun(t *testing.T) {
	g := newBlockGate()
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) {
		m.SetHandlerConcurrency(1).ConfigureRouterSocket(routemesh.SocketConfig{MailboxMessageBudget: 1}).
			HandleDirectRequest("block", g.request)
	})
	_, a := startDirectNode(t, "game", "a", nil, b)
	g.closeAtCleanup(t)
	pending := fireUntilBusy(t, a, "b", g)
	g.open()
	ran := 0
	for _, ch := range pending {
		o := awaitOutcome(t, "admitted request", ch, 10*time.Second)
		switch {
		case o.err == nil:
			ran++
		case errors.Is(o.err, zlink.ErrBusy):
		default:
			t.Fatalf("an admitted request ended with %v", o.err)
		}
	}
	if n := g.calls.Load(); n != int64(ran) {
		t.Fatalf("the handler ran %d times for %d calls answered: a call refused busy ran", n, ran)
	}
}

// ErrUnknownPacket, ErrBadPayload (a request that does not decode) and
// ErrTooLarge (a request over the receiver's limit): no handler ran.
// ErrHandler: the handler ran, once.
func TestErrorRows_RefusedRequestsDidNotRunHandlerErrorsDid(t *testing.T) {
	var typed, raw atomic.Int64
	echoP := wire.NewPacket[int64, int64]("num")
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) {
		m.ConfigureRouterSocket(routemesh.SocketConfig{MailboxByteBudget: 1 << 20})
		routemesh.OnDirectRequest(m, echoP, func(_ *routemesh.Context, v int64) (int64, error) {
			typed.Add(1)
			if v < 0 {
				return 0, errors.New("negative")
			}
			return v, nil
		})
		m.HandleDirectRequest("len", func(_ *routemesh.Context, p []byte) ([]byte, error) {
			raw.Add(1)
			return []byte(strconv.Itoa(len(p))), nil
		})
	})
	_, a := startDirectNode(t, "game", "a", nil, b)
	ctx := ctxT(t, 20*time.Second)

	if _, err := a.CallNode(ctx, "b", "nope", nil); !errors.Is(err, zlink.ErrUnknownPacket) {
		t.Fatalf("unknown packet: %v", err)
	}
	wrong, _ := wire.NewPacket[string, int64]("num").EncodeRequest("not a number")
	if _, err := a.CallNode(ctx, "b", "num", wrong); !errors.Is(err, zlink.ErrBadPayload) {
		t.Fatalf("undecodable request: %v, want ErrBadPayload", err)
	}
	if _, err := a.CallNode(ctx, "b", "len", make([]byte, 2<<20)); !errors.Is(err, zlink.ErrTooLarge) {
		t.Fatalf("oversized request: %v, want ErrTooLarge", err)
	}
	if typed.Load() != 0 || raw.Load() != 0 {
		t.Fatalf("handlers ran %d (typed) and %d (raw) times for refused requests; want 0", typed.Load(), raw.Load())
	}
	if _, err := routemesh.CallNode(ctx, a, "b", echoP, -1); !errors.Is(err, zlink.ErrHandler) {
		t.Fatalf("handler error: %v", err)
	}
	if typed.Load() != 1 {
		t.Fatalf("the handler ran %d times for one ErrHandler; want 1", typed.Load())
	}
}

// ErrShuttingDown and ErrNoTarget: nothing ran.
func TestErrorRows_ShuttingDownAndNoTargetDidNotRun(t *testing.T) {
	var ran atomic.Int64
	count := func(_ *routemesh.Context, p []byte) ([]byte, error) { ran.Add(1); return p, nil }
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", count) })
	ha, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", count) }, b)
	ctx := ctxT(t, 20*time.Second)
	if _, err := a.CallNode(ctx, "nobody", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("unknown RID: %v, want ErrNoTarget", err)
	}
	stopHost(t, ha)
	for _, rid := range []string{"a", "b"} {
		if _, err := a.CallNode(ctx, rid, "echo", nil); !errors.Is(err, zlink.ErrShuttingDown) {
			t.Fatalf("a→%s after stop: %v, want ErrShuttingDown", rid, err)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("handlers ran %d times; want 0", n)
	}
}
