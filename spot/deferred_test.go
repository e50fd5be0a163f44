package spot_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

type deferState struct {
	open map[string]*spot.Later[string]
}

var (
	askLaterP = wire.NewPacket[string, string]("ask-later")
	answerP   = wire.NewPacket[string, string]("answer")
	isOpenP   = wire.NewPacket[string, bool]("is-open")
)

func deferKind(idle time.Duration) *spot.Kind[deferState] {
	k := spot.NewKind("defer", func(string) *deferState { return &deferState{open: map[string]*spot.Later[string]{}} })
	spot.On(k, askLaterP, func(c *spot.Context, s *deferState, tag string) (string, error) {
		l, err := spot.Defer(c, askLaterP)
		if err != nil {
			return "", err
		}
		s.open[tag] = l
		return "ignored", nil
	})
	// answer answers the open request tag from another request's turn.
	spot.On(k, answerP, func(c *spot.Context, s *deferState, tag string) (string, error) {
		l := s.open[tag]
		if l == nil {
			return "", fmt.Errorf("no open request %s", tag)
		}
		delete(s.open, tag)
		if err := l.Reply(c, "answer:"+tag); err != nil {
			return "", err
		}
		return "answered", nil
	})
	spot.On(k, isOpenP, func(c *spot.Context, s *deferState, tag string) (bool, error) {
		l := s.open[tag]
		return l != nil && l.Open(), nil
	})
	if idle > 0 {
		k.SetIdleTimeout(idle)
	}
	return k
}

// A request left open is answered by a later turn, once; an open request
// keeps its Spot from idle deactivation.
func TestDeferred_AnsweredByALaterTurnAndKeepsTheSpotActive(t *testing.T) {
	servers, cl := timerNodes(t, func() spot.Registration { return deferKind(50 * time.Millisecond) }, 1)
	ctx := ctxT(t, 30*time.Second)
	got := make(chan error, 1)
	var reply string
	go func() {
		var err error
		reply, err = spot.Call(ctx, cl, "defer", "d", askLaterP, "x")
		got <- err
	}()
	// Ten idle timeouts pass with the request open: the Spot stays.
	waitFor(t, "the Spot active", 10*time.Second, func() bool {
		ids, _ := spot.Active(servers[0], "defer", 10)
		return len(ids) == 1
	})
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if ids, _ := spot.Active(servers[0], "defer", 10); len(ids) != 1 {
			t.Fatal("a Spot with an open request was deactivated for idleness")
		}
		time.Sleep(10 * time.Millisecond) // the check's pace, not a wait for an event
	}
	if v, err := spot.Call(ctx, cl, "defer", "d", answerP, "x"); err != nil || v != "answered" {
		t.Fatalf("answer: %q %v", v, err)
	}
	if err := <-got; err != nil || reply != "answer:x" {
		t.Fatalf("the deferred call: %q %v", reply, err)
	}
}

// The caller's deadline ends an open request once (ErrTimeout); a later
// answer finds it ended.
func TestDeferred_DeadlineEndsItOnce(t *testing.T) {
	_, cl := timerNodes(t, func() spot.Registration { return deferKind(0) }, 1)
	ctx := ctxT(t, 30*time.Second)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := spot.Call(short, cl, "defer", "d", askLaterP, "y"); !errors.Is(err, zlink.ErrTimeout) {
		t.Fatalf("an open request past its deadline: %v, want ErrTimeout", err)
	}
	// The Spot sees the deadline on its own clock, at most a little after
	// the caller: once it has, the answer finds the request ended.
	waitFor(t, "the open request ended on the Spot", 10*time.Second, func() bool {
		open, err := spot.Call(ctx, cl, "defer", "d", isOpenP, "y")
		return err == nil && !open
	})
	if _, err := spot.Call(ctx, cl, "defer", "d", answerP, "y"); !errors.Is(err, spot.ErrOutcomeUnknown) {
		t.Fatalf("answering an ended request: %v, want ErrOutcomeUnknown", err)
	}
}

// A drain ends the open requests of the Spots it deactivates at once with
// ErrOutcomeUnknown (the handler ran, its answer never came), not at the
// caller's deadline.
func TestDeferred_DrainEndsOpenRequestsAtOnce(t *testing.T) {
	servers, cl := timerNodes(t, func() spot.Registration { return deferKind(0) }, 2)
	ctx := ctxT(t, 30*time.Second)
	got := make(chan error, 1)
	go func() {
		_, err := spot.Call(ctx, cl, "defer", "d", askLaterP, "z")
		got <- err
	}()
	var owner *routemesh.Node
	waitFor(t, "the Spot active", 10*time.Second, func() bool {
		for _, s := range servers {
			if ids, _ := spot.Active(s, "defer", 10); len(ids) == 1 {
				owner = s
				return true
			}
		}
		return false
	})
	if err := owner.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, spot.ErrOutcomeUnknown) {
			t.Fatalf("an open request on a drained node: %v, want ErrOutcomeUnknown", err)
		}
	case <-ctx.Done():
		t.Fatal("the open request was not ended by the drain")
	}
}
