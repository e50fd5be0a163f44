package spot

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A turn's context says what context.WithDeadline's would — its deadline,
// the parent's cancellation, the deadline passing (Err and Done alike),
// Canceled once the turn stopped — whether or not anything armed its
// timer by asking for Done.
func TestTurnCtx_ActsLikeWithDeadline(t *testing.T) {
	far := time.Now().Add(time.Hour)
	c := newTurnCtx(context.Background(), far)
	if d, ok := c.Deadline(); !ok || !d.Equal(far) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("live: %v", err)
	}
	c.stop()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped without a timer: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done of a stopped context is not closed")
	}

	armed := newTurnCtx(context.Background(), far)
	done := armed.Done()
	armed.stop()
	<-done
	if err := armed.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped with a timer: %v", err)
	}

	parent, cancel := context.WithCancel(context.Background())
	p := newTurnCtx(parent, far)
	cancel()
	if err := p.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("parent cancelled: %v", err)
	}
	<-p.Done()

	past := newTurnCtx(context.Background(), time.Now().Add(-time.Millisecond))
	if err := past.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline passed, no timer: %v", err)
	}
	<-past.Done()
	past.stop()
	if err := past.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline passed, then stopped: %v", err)
	}

	soon := newTurnCtx(context.Background(), time.Now().Add(20*time.Millisecond))
	<-soon.Done() // the armed timer ends it at the deadline
	if err := soon.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("at the deadline: %v", err)
	}
	if v := newTurnCtx(context.WithValue(context.Background(), turnCtxKey{}, 7), far).Value(turnCtxKey{}); v != 7 {
		t.Fatalf("value %v", v)
	}
}

type turnCtxKey struct{}

func newTurnCtx(parent context.Context, deadline time.Time) *turnCtx {
	return &turnCtx{parent: parent, deadline: deadline}
}
