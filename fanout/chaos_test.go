package fanout

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/supervisor"
)

// chaosTree is an actor system with a fanout:<channel> supervisor, as a
// Host builds it.
func chaosTree(t *testing.T) (*actors.System, *actors.Ref) {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Name: "chaos", Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	parent, err := sys.Spawn(actors.Spec{Name: "fanout:c", Kind: "fanout", Supervisor: DefaultSupervision(),
		Producer: func() actors.Actor { return actors.ReceiveFunc(func(*actors.Context) {}) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return sys, parent
}

// waitRestarted waits until the actor at path has been restarted after a
// failure whose reason contains reason, and runs again.
func waitRestarted(t *testing.T, sys *actors.System, path, reason string, restarts int) {
	t.Helper()
	waitUntil(t, path+" restarted after "+reason, func() bool {
		n, ok := sys.Registry().Find(path)
		return ok && n.Restarts >= restarts && n.State == supervisor.Running &&
			n.LastFailure != nil && strings.Contains(n.LastFailure.Reason, reason)
	})
}

// A panic in the publisher's actor and then in the subscriber's, while
// messages flow: each is restarted (the tree shows it), the publisher keeps
// its endpoint, and delivery resumes — with manual endpoints and with
// publishers found in the Location Store.
func TestFanout_Chaos_PublisherAndSubscriberRecoverFromPanic(t *testing.T) {
	for _, automatic := range []bool{false, true} {
		name := map[bool]string{false: "manual", true: "automatic"}[automatic]
		t.Run(name, func(t *testing.T) { chaosRecover(t, automatic) })
	}
}

func chaosRecover(t *testing.T, automatic bool) {
	sys, parent := chaosTree(t)
	pcfg := PublisherConfig{Channel: "c", System: sys, Parent: parent}
	if automatic {
		store := location.NewMemory()
		t.Cleanup(func() { _ = store.Close() })
		pcfg.Store, pcfg.TTL = store, time.Minute
	}
	p := startPub(t, pcfg)
	var got atomic.Int64
	scfg := SubscriberConfig{Channel: "c", System: sys, Parent: parent,
		ReceiveTimeout: time.Second, Handler: func(Message) { got.Add(1) }}
	if automatic {
		scfg.Automatic, scfg.Store, scfg.PollInterval = true, pcfg.Store, 20*time.Millisecond
	} else {
		scfg.Endpoints = []string{p.Endpoint()}
	}
	s := startSub(t, scfg)
	if p.Path() != "/fanout:c/publisher" || s.Path() != "/fanout:c/subscriber" {
		t.Fatalf("paths %s, %s", p.Path(), s.Path())
	}
	stop := make(chan struct{})
	flowing := make(chan struct{})
	go func() {
		defer close(flowing)
		tick := time.NewTicker(time.Millisecond) // the publishing rate
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = p.Publish("t", []byte("x")) // ErrRestarting while it restarts
			}
		}
	}()
	defer func() { close(stop); <-flowing }()
	resumes := func(what string) {
		t.Helper()
		from := got.Load()
		waitUntil(t, what, func() bool { return got.Load() >= from+20 })
	}
	resumes("messages flow")

	endpoint := p.Endpoint()
	if err := p.h.ref.Tell(crash{reason: "chaos: publisher"}); err != nil {
		t.Fatal(err)
	}
	waitRestarted(t, sys, p.Path(), "chaos: publisher", 1)
	resumes("delivery resumes after the publisher's restart")
	if p.Endpoint() != endpoint || p.Err() != nil {
		t.Fatalf("after restart: endpoint %s (was %s), err %v", p.Endpoint(), endpoint, p.Err())
	}

	if err := s.h.ref.Tell(crash{reason: "chaos: subscriber"}); err != nil {
		t.Fatal(err)
	}
	waitRestarted(t, sys, s.Path(), "chaos: subscriber", 1)
	resumes("delivery resumes after the subscriber's restart")
	if st := s.Status(); len(st) != 1 || st[0].State != StateLive || s.Err() != nil {
		t.Fatalf("subscriber after restart: %+v, err %v", st, s.Err())
	}
}

// A publisher whose endpoint is taken while it restarts cannot come back:
// it stops for good, Err and Publish say why, and its supervisor's node in
// the tree shows the failure.
func TestFanout_Chaos_PublisherThatCannotRebindFails(t *testing.T) {
	sys, parent := chaosTree(t)
	p := startPub(t, PublisherConfig{Channel: "c", System: sys, Parent: parent})
	var thief net.Listener
	defer func() {
		if thief != nil {
			_ = thief.Close()
		}
	}()
	p.testRebind = func(ep string) {
		addr, _ := strings.CutPrefix(zguard.TCPEndpoint(ep), "tcp://")
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("take the port: %v", err)
			return
		}
		thief = l
	}
	if err := p.h.ref.Tell(crash{reason: "chaos"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the publisher failed", func() bool { return p.Err() != nil })
	if err := p.Err(); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "bind the endpoint again") {
		t.Fatalf("Err = %v", err)
	}
	if err := p.Publish("t", nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("Publish = %v", err)
	}
	n, _ := sys.Registry().Find(parent.Path())
	if !strings.Contains(n.Info["publisher"], "bind the endpoint again") {
		t.Fatalf("supervisor node info %v", n.Info)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// Without a System the publisher runs in an internal one: past its
// restart limit it stops for good and Err says so.
func TestFanout_Chaos_InternalSystemStopsPastTheRestartLimit(t *testing.T) {
	p := startPub(t, PublisherConfig{Channel: "c"})
	limit := DefaultSupervision().MaxRestarts
	for i := 0; i <= limit && p.Err() == nil; i++ {
		waitUntil(t, "publisher running", func() bool {
			n, ok := p.h.sys.Registry().Find(p.Path())
			return p.Err() != nil || ok && n.State == supervisor.Running && n.Restarts == i
		})
		_ = p.h.ref.Tell(crash{reason: "chaos"})
	}
	waitUntil(t, "the publisher failed", func() bool { return p.Err() != nil })
	if err := p.Publish("t", nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("Publish = %v", err)
	}
}

// Under a supervisor, failing past the restart limit escalates: the
// supervisor is restarted, which stops both of its fanout actors for good.
func TestFanout_Chaos_PastTheLimitEscalatesToTheSupervisor(t *testing.T) {
	sys, parent := chaosTree(t)
	p := startPub(t, PublisherConfig{Channel: "c", System: sys, Parent: parent})
	s := startSub(t, SubscriberConfig{Channel: "c", Endpoints: []string{p.Endpoint()}, System: sys, Parent: parent})
	limit := DefaultSupervision().MaxRestarts
	for i := 0; i <= limit && p.Err() == nil; i++ {
		waitUntil(t, "publisher running", func() bool {
			n, ok := sys.Registry().Find(p.Path())
			return p.Err() != nil || ok && n.State == supervisor.Running && n.Restarts == i
		})
		_ = p.h.ref.Tell(crash{reason: "chaos"})
	}
	waitUntil(t, "both failed", func() bool { return p.Err() != nil && s.Err() != nil })
	n, ok := sys.Registry().Find(parent.Path())
	if !ok || n.Restarts != 1 || !strings.Contains(n.Info["publisher"], "chaos") || n.Info["subscriber"] == "" {
		t.Fatalf("supervisor node %+v", n)
	}
}
