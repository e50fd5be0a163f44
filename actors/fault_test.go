package actors_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/supervisor"
)

// failActor answers the message it panicked on through MessageFailed.
type failActor struct {
	failed  chan any
	dropped chan any
	gate    chan struct{}
	entered chan struct{}
}

type explode struct{ id int }

func (a *failActor) Receive(c *actors.Context) {
	switch m := c.Message().(type) {
	case *explode:
		panic("explode")
	case *ping:
		c.Respond("pong")
	case *block:
		a.entered <- struct{}{}
		<-a.gate
	default:
		_ = m
	}
}

func (a *failActor) MessageFailed(msg any) { a.failed <- msg }

func (a *failActor) MessageDropped(msg any) { a.dropped <- msg }

func TestSystem_MessageFailedGetsThePanickingMessage(t *testing.T) {
	s := newSystem(t)
	failed := make(chan any, 4)
	ref, err := s.Spawn(actors.Spec{Name: "f", Producer: func() actors.Actor { return &failActor{failed: failed, dropped: make(chan any, 1)} }})
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
	// A Request whose handler panics ends with ErrFailed at once.
	if _, err := ref.Request(ctxT(t), &explode{id: 8}); !errors.Is(err, actors.ErrFailed) {
		t.Fatalf("Request that panicked = %v, want ErrFailed", err)
	}
	<-failed
	select {
	case got := <-failed:
		t.Fatalf("MessageFailed called again with %#v", got)
	default:
	}
}

func TestSystem_InjectPanicRestartsTheActor(t *testing.T) {
	s := newSystem(t)
	starts := &atomic.Int64{}
	ref, err := s.Spawn(actors.Spec{Name: "w", Kind: "worker", Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			switch c.Message().(type) {
			case *actors.Started:
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
		Producer: func() actors.Actor {
			return actors.ReceiveFunc(func(c *actors.Context) {
				if _, ok := c.Message().(*actors.Started); ok {
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

func TestSystem_MessagesLeftInAStoppedMailboxAreHandedToMessageDropped(t *testing.T) {
	s := newSystem(t)
	dropped := make(chan any, 16)
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	// The parent, when told to stop, stops its child first (a system
	// message, ahead of anything the child still has queued) and only
	// then lets the child's running turn end.
	parent, err := s.Spawn(actors.Spec{Name: "p", Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			if _, ok := c.Message().(*actors.Stopping); ok {
				actors.StopChildrenNow(c)
				close(gate)
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	child, err := s.Spawn(actors.Spec{Name: "c", Parent: parent, MaxMessages: 10, Producer: func() actors.Actor {
		return &failActor{failed: make(chan any, 1), dropped: dropped, gate: gate, entered: entered}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The child is busy; three messages wait behind it when it is stopped.
	if err := child.Tell(&block{}); err != nil {
		t.Fatal(err)
	}
	<-entered
	for i := 0; i < 3; i++ {
		if err := child.Tell(&explode{id: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := parent.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		select {
		case m := <-dropped:
			if e, ok := m.(*explode); !ok || e.id != i {
				t.Fatalf("dropped #%d = %#v", i, m)
			}
		case <-ctxT(t).Done():
			t.Fatalf("only %d of 3 messages handed to MessageDropped", i)
		}
	}
	if st := child.Quota().Stats(); st.Depth != 0 {
		t.Fatalf("budget not released: %+v", st)
	}
}
