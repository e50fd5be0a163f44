package actors_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/supervisor"
)

// failActor answers the message it panicked on through MessageFailed.
type failActor struct {
	failed chan any
}

type explode struct{ id int }

func (a *failActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *explode:
		panic("explode")
	case *ping:
		c.Respond("pong")
	default:
		_ = m
	}
}

func (a *failActor) MessageFailed(msg any) { a.failed <- msg }

func TestSystem_MessageFailedGetsThePanickingMessage(t *testing.T) {
	s := newSystem(t)
	failed := make(chan any, 4)
	ref, err := s.Spawn(actors.Spec{Name: "f", Producer: func() actor.Actor { return &failActor{failed: failed} }})
	if err != nil {
		t.Fatal(err)
	}
	// A message handled without a panic is never reported.
	if _, err := ref.Request(ctxT(t), &ping{}); err != nil {
		t.Fatal(err)
	}
	msg := &explode{id: 7}
	if err := ref.Tell(msg); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-failed:
		if got != msg {
			t.Fatalf("MessageFailed(%#v), want the panicking message", got)
		}
	case <-ctxT(t).Done():
		t.Fatal("MessageFailed not called")
	}
	if got, err := ref.Request(ctxT(t), &ping{}); err != nil || got != "pong" {
		t.Fatalf("after restart: %v %v", got, err)
	}
	select {
	case got := <-failed:
		t.Fatalf("MessageFailed called again with %#v", got)
	default:
	}
}

func TestSystem_InjectPanicRestartsTheActor(t *testing.T) {
	s := newSystem(t)
	starts := &atomic.Int64{}
	ref, err := s.Spawn(actors.Spec{Name: "w", Kind: "worker", Producer: func() actor.Actor {
		return actor.ReceiveFunc(func(c actor.Context) {
			switch c.Message().(type) {
			case *actor.Started:
				starts.Add(1)
			case *ping:
				c.Respond("pong")
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InjectPanic("/w", "chaos"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart recorded", func() bool {
		n, _ := s.Registry().Find("/w")
		return n.Restarts == 1 && n.State == supervisor.Running && n.LastFailure != nil && n.LastFailure.Reason == "chaos"
	})
	if got, err := ref.Request(ctxT(t), &ping{}); err != nil || got != "pong" || starts.Load() != 2 {
		t.Fatalf("after restart: %v %v starts=%d", got, err, starts.Load())
	}
	if err := s.InjectPanic("/nobody", "x"); !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("InjectPanic on a missing path = %v", err)
	}
}

func TestSupervisor_OnGiveUpStopsTheChildInsteadOfEscalating(t *testing.T) {
	s := newSystem(t)
	gaveUp := make(chan string, 1)
	parentStarts := &atomic.Int64{}
	parent, err := s.Spawn(actors.Spec{
		Name: "host",
		Supervisor: supervisor.Config{MaxRestarts: 1, Within: time.Minute,
			OnGiveUp: func(child string, reason any) { gaveUp <- child }},
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(c actor.Context) {
				if _, ok := c.Message().(*actor.Started); ok {
					parentStarts.Add(1)
				}
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	child := spawnWorker(t, s, actors.Spec{Name: "mesh", Parent: parent}, &worker{})
	_ = child.Tell(&boom{err: errors.New("one")})
	if _, err := child.Request(ctxT(t), &ping{}); err != nil {
		t.Fatal(err)
	}
	_ = child.Tell(&boom{err: errors.New("two")})
	select {
	case p := <-gaveUp:
		if p != "/host/mesh" {
			t.Fatalf("gave up on %s", p)
		}
	case <-ctxT(t).Done():
		t.Fatal("OnGiveUp not called")
	}
	select {
	case <-child.Done():
	case <-ctxT(t).Done():
		t.Fatal("child not stopped")
	}
	if n, _ := s.Registry().Find("/host"); n.Restarts != 0 || parentStarts.Load() != 1 {
		t.Fatalf("the parent was disturbed: %+v starts=%d", n, parentStarts.Load())
	}
}
