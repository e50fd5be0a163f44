package actors_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/supervisor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter throttle: a one-shot timer goroutine that
		// lives DeadLetterThrottleInterval after the first dead letter.
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewThrottle.func1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

func newSystem(t *testing.T) *actors.System {
	t.Helper()
	cfg := actors.DefaultConfig()
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s := actors.NewSystem(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// worker counts messages, answers requests, blocks on gate messages and
// panics on demand.
type worker struct {
	count   *atomic.Int64
	gate    chan struct{}
	stopped func(processed int64)
}

type (
	ping  struct{}
	block struct{}
	boom  struct{ err error }
	add   struct{ n int64 }

	quiet struct{} // never answered
)

func (w *worker) Receive(c *actors.Context) {
	switch m := c.Message().(type) {
	case *ping:
		c.Respond("pong")
	case *block:
		w.count.Add(1)
		<-w.gate
	case *add:
		w.count.Add(m.n)
	case []byte:
		w.count.Add(1)
	case *boom:
		panic(m.err)
	case *actors.Stopped:
		if w.stopped != nil {
			w.stopped(w.count.Load())
		}
	}
}

func spawnWorker(t *testing.T, s *actors.System, spec actors.Spec, w *worker) *actors.Ref {
	t.Helper()
	if w.count == nil {
		w.count = &atomic.Int64{}
	}
	if spec.Producer == nil {
		spec.Producer = func() actors.Actor { return w }
	}
	ref, err := s.Spawn(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestRef_TellAndRequest(t *testing.T) {
	s := newSystem(t)
	w := &worker{}
	ref := spawnWorker(t, s, actors.Spec{Name: "w", MaxMessages: 100}, w)
	for range 10 {
		if err := ref.Tell(&add{n: 2}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ref.Request(ctxT(t), &ping{})
	if err != nil || got != "pong" {
		t.Fatalf("Request = %v, %v", got, err)
	}
	// The request was queued after the tells, so they are all processed.
	if w.count.Load() != 20 {
		t.Fatalf("count = %d", w.count.Load())
	}
	if ref.Path() != "/w" || actors.PIDID(ref) != "w" {
		t.Fatalf("ref %s %v", ref.Path(), actors.PIDID(ref))
	}
	waitFor(t, "all released", func() bool { return ref.Quota().Stats().Processed == 11 })
}

func TestRef_MailboxFullIsTypedErrorNotBlockOrDrop(t *testing.T) {
	s := newSystem(t)
	w := &worker{gate: make(chan struct{})}
	ref := spawnWorker(t, s, actors.Spec{Name: "w", MaxMessages: 2, MaxBytes: 10}, w)

	if err := ref.Tell(&block{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "worker blocked", func() bool { return w.count.Load() == 1 })
	if err := ref.Tell([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	// Both budgets: 2 messages held (one in processing), 8 bytes.
	err := ref.Tell([]byte("1"))
	var fe *mailbox.FullError
	if !errors.As(err, &fe) || !errors.Is(err, mailbox.ErrMailboxFull) || fe.Budget != mailbox.BudgetMessages || fe.Max != 2 {
		t.Fatalf("third Tell = %v, want message budget refusal", err)
	}
	if _, err := ref.Request(ctxT(t), &ping{}); !errors.As(err, &fe) {
		t.Fatalf("Request on full mailbox = %v", err)
	}
	close(w.gate)
	waitFor(t, "drain", func() bool { return ref.Quota().Stats().Depth == 0 })
	if w.count.Load() != 2 {
		t.Fatalf("processed %d, want 2 (none dropped)", w.count.Load())
	}

	// Byte budget: 8 bytes queued behind a blocked handler leave room for 2.
	w.gate = make(chan struct{})
	defer close(w.gate)
	w.count.Store(0)
	if err := ref.Tell(&block{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "worker blocked again", func() bool { return w.count.Load() == 1 })
	if err := ref.Tell([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	ref2 := spawnWorker(t, s, actors.Spec{Name: "bytes", MaxBytes: 10}, &worker{gate: w.gate})
	if err := ref2.Tell([]byte("12345678901")); !errors.As(err, &fe) || fe.Budget != mailbox.BudgetBytes {
		t.Fatalf("oversized Tell = %v, want byte budget refusal", err)
	}
}

func TestRef_StopDrainsAdmittedThenRefuses(t *testing.T) {
	s := newSystem(t)
	var atStop atomic.Int64
	stoppedCh := make(chan struct{})
	w := &worker{gate: make(chan struct{}), stopped: func(n int64) { atStop.Store(n); close(stoppedCh) }}
	ref := spawnWorker(t, s, actors.Spec{Name: "w"}, w)
	if err := ref.Tell(&block{}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := ref.Tell(&add{n: 1}); err != nil {
			t.Fatal(err)
		}
	}
	stopErr := make(chan error, 1)
	go func() { stopErr <- ref.Stop(ctxT(t)) }()
	// Keep telling until Stop has closed the Ref; whatever got in before
	// must still be processed.
	var extra int64
	for {
		err := ref.Tell(&add{n: 1})
		if errors.Is(err, actors.ErrStopped) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		extra++
	}
	if _, err := ref.Request(ctxT(t), &ping{}); !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("Request after Stop = %v", err)
	}
	close(w.gate)
	if err := <-stopErr; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	<-stoppedCh
	if want := 1 + 5 + extra; atStop.Load() != want {
		t.Fatalf("processed %d before stopping, want %d", atStop.Load(), want)
	}
	if _, ok := s.Registry().Find("/w"); ok {
		t.Fatal("stopped actor still in registry")
	}
	if err := ref.Stop(ctxT(t)); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestRef_RequestTimeoutAndCancel(t *testing.T) {
	s := newSystem(t)
	ref := spawnWorker(t, s, actors.Spec{Name: "w"}, &worker{})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := ref.Request(ctx, &quiet{})
	if !errors.Is(err, actors.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout err = %v", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ref.Request(ctx2, &quiet{})
		done <- err
	}()
	waitFor(t, "request processed", func() bool { return ref.Quota().Stats().Processed == 2 })
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, actors.ErrTimeout) {
		t.Fatalf("cancel err = %v", err)
	}
	if _, err := ref.Request(ctx2, &ping{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("already-cancelled ctx: %v", err)
	}
}

func TestRef_RequestEndsWhenActorStops(t *testing.T) {
	s := newSystem(t)
	w := &worker{gate: make(chan struct{})}
	ref := spawnWorker(t, s, actors.Spec{Name: "w"}, w)
	if err := ref.Tell(&block{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ref.Request(context.Background(), &quiet{})
		done <- err
	}()
	waitFor(t, "request queued", func() bool { return ref.Quota().Stats().Depth == 2 })
	go func() { _ = ref.Stop(context.Background()) }()
	close(w.gate)
	if err := <-done; !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("pending request = %v, want ErrStopped", err)
	}
}

func TestSystem_PanicRestartVisibleInRegistry(t *testing.T) {
	s := newSystem(t)
	ref := spawnWorker(t, s, actors.Spec{Name: "w", Kind: "worker"}, &worker{})
	if err := ref.Tell(&boom{err: errors.New("bad input")}); err != nil {
		t.Fatal(err)
	}
	if got, err := ref.Request(ctxT(t), &ping{}); err != nil || got != "pong" {
		t.Fatalf("after restart: %v %v", got, err)
	}
	n, ok := s.Registry().Find("/w")
	if !ok || n.Restarts != 1 || n.State != supervisor.Running || n.Kind != "worker" ||
		n.LastFailure == nil || n.LastFailure.Reason != "bad input" || !strings.Contains(n.LastFailure.Stack, "panic") {
		t.Fatalf("node = %+v", n)
	}
	// The reply is sent from inside the handler; the release follows it.
	waitFor(t, "both messages released", func() bool {
		st := ref.Quota().Stats()
		return st.Depth == 0 && st.Processed == 2
	})
}

func TestSystem_SpawnUnderParentAndEscalate(t *testing.T) {
	s := newSystem(t)
	parentStarts := &atomic.Int64{}
	parent, err := s.Spawn(actors.Spec{
		Name:       "host",
		Supervisor: supervisor.Config{MaxRestarts: 1, Within: time.Minute},
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
	child := spawnWorker(t, s, actors.Spec{Name: "peers", Parent: parent, MaxMessages: 7}, &worker{})
	if child.Path() != "/host/peers" {
		t.Fatalf("path = %s", child.Path())
	}
	if _, err := s.Spawn(actors.Spec{Name: "peers", Parent: parent, Producer: func() actors.Actor { return &worker{} }}); !errors.Is(err, actors.ErrNameTaken) {
		t.Fatalf("duplicate spawn = %v", err)
	}
	snap := s.Registry().Snapshot()
	if len(snap.Children) != 1 || len(snap.Children[0].Children) != 1 ||
		snap.Children[0].Children[0].Mailbox.MaxMessages != 7 {
		t.Fatalf("tree:\n%s", snap)
	}

	// Within intensity: the child restarts.
	_ = child.Tell(&boom{err: errors.New("one")})
	if _, err := child.Request(ctxT(t), &ping{}); err != nil {
		t.Fatal(err)
	}
	// Past it: escalated to host, which is restarted by the top-level
	// supervisor; restarting host stops the child.
	_ = child.Tell(&boom{err: errors.New("two")})
	select {
	case <-child.Done():
	case <-ctxT(t).Done():
		t.Fatal("child not stopped after escalation")
	}
	waitFor(t, "host restarted", func() bool {
		n, _ := s.Registry().Find("/host")
		return n.Restarts == 1 && n.State == supervisor.Running && parentStarts.Load() == 2
	})
	if _, ok := s.Registry().Find("/host/peers"); ok {
		t.Fatal("stopped child still registered")
	}
	if err := child.Tell(&ping{}); !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("Tell to escalated child = %v", err)
	}
}

func TestSystem_SpawnChildFromInsideActor(t *testing.T) {
	s := newSystem(t)
	got := make(chan *actors.Ref, 1)
	_, err := s.Spawn(actors.Spec{Name: "p", Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			if _, ok := c.Message().(*actors.Started); ok {
				r, err := c.Spawn(actors.Spec{Name: "c", Producer: func() actors.Actor { return &worker{count: &atomic.Int64{}} }})
				if err != nil {
					panic(err)
				}
				got <- r
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := <-got
	if c.Path() != "/p/c" || actors.PIDID(c) != "p/c" {
		t.Fatalf("child %s %s", c.Path(), actors.PIDID(c))
	}
	if v, err := c.Request(ctxT(t), &ping{}); err != nil || v != "pong" {
		t.Fatalf("child request: %v %v", v, err)
	}
}

func TestSystem_SpawnValidation(t *testing.T) {
	s := newSystem(t)
	for _, spec := range []actors.Spec{
		{Name: "", Producer: func() actors.Actor { return &worker{} }},
		{Name: "a/b", Producer: func() actors.Actor { return &worker{} }},
		{Name: "x"},
		{Name: "y", Producer: func() actors.Actor { return &worker{} }, Supervisor: supervisor.Config{Kind: 7}},
	} {
		if _, err := s.Spawn(spec); !errors.Is(err, actors.ErrInvalidSpec) {
			t.Fatalf("Spawn(%q) = %v", spec.Name, err)
		}
	}
}

func TestSystem_ShutdownDrainsEverything(t *testing.T) {
	cfg := actors.DefaultConfig()
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s := actors.NewSystem(cfg)
	var refs []*actors.Ref
	var workers []*worker
	parent := spawnWorker(t, s, actors.Spec{Name: "p"}, &worker{})
	for _, name := range []string{"a", "b"} {
		w := &worker{count: &atomic.Int64{}}
		refs = append(refs, spawnWorker(t, s, actors.Spec{Name: name, Parent: parent}, w))
		workers = append(workers, w)
	}
	for i, r := range refs {
		for range 100 {
			if err := r.Tell(&add{n: 1}); err != nil {
				t.Fatal(err)
			}
		}
		_ = i
	}
	if err := s.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for i, w := range workers {
		if w.count.Load() != 100 {
			t.Fatalf("worker %d processed %d of 100", i, w.count.Load())
		}
	}
	if _, err := s.Spawn(actors.Spec{Name: "late", Producer: func() actors.Actor { return &worker{} }}); !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("Spawn after Shutdown = %v", err)
	}
	if n := s.Registry().Snapshot(); len(n.Children) != 0 {
		t.Fatalf("registry after shutdown:\n%s", n)
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestSystem_ProtoactorSlogGoesToZerolog(t *testing.T) {
	var buf lockedBuf
	cfg := actors.DefaultConfig()
	cfg.Name = "sys1"
	cfg.Logger = zerolog.New(&buf)
	s := actors.NewSystem(cfg)
	defer func() { _ = s.Shutdown(context.Background()) }()
	actors.ProtoLogger(s).Warn("hello from protoactor", "k", 7)
	out := buf.String()
	for _, want := range []string{`"message":"actor system started"`, `"lib":"protoactor"`, `"system":"sys1"`,
		`"level":"warn"`, `"message":"hello from protoactor"`, `"k":7`} {
		if !strings.Contains(out, want) {
			t.Fatalf("log output lacks %s:\n%s", want, out)
		}
	}
}

// Control messages are never refused for want of budget: with the budget
// spent, TellControl and RequestControl still get through (and count in
// the depth), after the application traffic already admitted, and none is
// lost; a stopped actor refuses them with ErrStopped.
func TestRef_ControlMessagesHaveReservedCapacity(t *testing.T) {
	s := newSystem(t)
	w := &worker{gate: make(chan struct{})}
	ref := spawnWorker(t, s, actors.Spec{Name: "w", MaxMessages: 2, MaxBytes: 100}, w)
	if err := ref.Tell(&block{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "worker blocked", func() bool { return w.count.Load() == 1 })
	if err := ref.Tell(&add{n: 10}); err != nil {
		t.Fatal(err)
	}
	if err := ref.Tell(&add{n: 100}); !errors.Is(err, mailbox.ErrMailboxFull) {
		t.Fatalf("traffic past the budget: %v, want ErrMailboxFull", err)
	}
	for range 5 {
		if err := ref.TellControl(&add{n: 1000}); err != nil {
			t.Fatalf("control message refused: %v", err)
		}
	}
	if d := ref.Quota().Stats().Depth; d != 7 {
		t.Fatalf("depth %d, want 7 (one running, one queued, five control)", d)
	}
	replied := make(chan error, 1)
	go func() {
		v, err := ref.RequestControl(ctxT(t), &ping{})
		if err == nil && v != "pong" {
			err = fmt.Errorf("reply %v", v)
		}
		replied <- err
	}()
	close(w.gate)
	if err := <-replied; err != nil {
		t.Fatalf("control request: %v", err)
	}
	waitFor(t, "every message handled", func() bool { return w.count.Load() == 1+10+5000 })
	if err := ref.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := ref.TellControl(&add{n: 1}); !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("control message to a stopped actor: %v, want ErrStopped", err)
	}
}

// The Context an actor gets: its own Ref, the lifecycle messages as this
// package's types, Poison after what is queued, a ReplyTo whose
// reservation lands in the actor's own mailbox, and the deprecated
// System forms answering the same.
func TestContext_SelfLifecyclePoisonReplyTo(t *testing.T) {
	s := newSystem(t)
	type event struct {
		msg  any
		self *actors.Ref
	}
	events := make(chan event, 64)
	replyTo := make(chan actors.ReplyTo, 1)
	ref, err := s.Spawn(actors.Spec{Name: "ctx", MaxMessages: 8, Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			events <- event{msg: c.Message(), self: c.Self()}
			switch c.Message().(type) {
			case *actors.Started:
				if s.Self(c) != c.Self() {
					panic("System.Self differs from c.Self")
				}
				child, err := s.SpawnChild(c, actors.Spec{Name: "kid", Producer: func() actors.Actor { return &worker{count: &atomic.Int64{}} }})
				if err != nil || child.Path() != "/ctx/kid" {
					panic(fmt.Sprint("SpawnChild: ", child, err))
				}
				replyTo <- c.ReplyTo()
			case string:
				c.Respond("nobody waits") // a Tell: nothing happens
				c.Poison()
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	next := func() event {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no message reached the actor")
			return event{}
		}
	}
	if e := next(); e.self != ref {
		t.Fatalf("first message %T, self %v", e.msg, e.self)
	} else if _, ok := e.msg.(*actors.Started); !ok {
		t.Fatalf("first message %T, want *actors.Started", e.msg)
	}
	slot, err := (<-replyTo).Reserve()
	if err != nil {
		t.Fatal(err)
	}
	slot.Post(&add{n: 1})
	if e := next(); e.msg.(*add).n != 1 {
		t.Fatalf("reserved post: %+v", e.msg)
	}
	if err := ref.Tell("stop"); err != nil {
		t.Fatal(err)
	}
	next() // "stop"
	if _, ok := next().msg.(*actors.Stopping); !ok {
		t.Fatal("Poison did not stop the actor")
	}
	if _, ok := next().msg.(*actors.Stopped); !ok {
		t.Fatal("no *actors.Stopped")
	}
	<-ref.Done()
	if _, err := (actors.ReplyTo{}).Reserve(); !errors.Is(err, actors.ErrStopped) {
		t.Fatalf("zero ReplyTo reserved: %v", err)
	}
}
