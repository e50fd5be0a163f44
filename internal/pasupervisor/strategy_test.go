package pasupervisor

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/internal/pamailbox"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/supervisor"
)

var errBoom = errors.New("boom")

// tree is a small protoactor test harness: actors that register themselves
// in a supervisor.Registry, report lifecycle events and crash on command.
type tree struct {
	t      *testing.T
	sys    *actor.ActorSystem
	reg    *supervisor.Registry
	events chan string

	mu      sync.Mutex
	starts  map[string]int
	configs map[string]supervisor.Config // how each named actor supervises its children
	kids    map[string][]string          // children each actor spawns on Started
	strats  map[string]*strategy
}

func newTree(t *testing.T) *tree {
	tr := &tree{
		t: t, sys: actor.NewActorSystem(), reg: supervisor.NewRegistry(), events: make(chan string, 256),
		starts: map[string]int{}, configs: map[string]supervisor.Config{}, kids: map[string][]string{},
		strats: map[string]*strategy{},
	}
	return tr
}

type crash struct{ err error }

type node struct{ tr *tree }

func (n *node) Receive(c actor.Context) {
	tr := n.tr
	path := PathOf(c.Self())
	switch m := c.Message().(type) {
	case *actor.Started:
		tr.mu.Lock()
		tr.starts[path]++
		kids := tr.kids[path]
		tr.mu.Unlock()
		tr.reg.SetState(path, supervisor.Running)
		for _, k := range kids {
			_ = tr.reg.Add(path+"/"+k, path, "test", nil)
			if _, err := c.SpawnNamed(tr.props(path+"/"+k, false), k); err != nil {
				panic(err)
			}
		}
		tr.events <- "started " + path
	case *actor.Restarting:
		tr.reg.SetState(path, supervisor.Restarting)
	case *actor.Stopping:
		tr.reg.SetState(path, supervisor.Stopping)
	case *actor.Stopped:
		tr.reg.SetState(path, supervisor.Stopped)
		tr.reg.Remove(path)
		tr.events <- "stopped " + path
	case *crash:
		panic(m.err)
	}
}

func (tr *tree) props(path string, top bool) *actor.Props {
	tr.mu.Lock()
	cfg, ok := tr.configs[path]
	tr.mu.Unlock()
	if !ok {
		cfg = supervisor.DefaultConfig()
	}
	st := newStrategy(cfg, tr.reg, false)
	tr.mu.Lock()
	tr.strats[path] = st
	tr.mu.Unlock()
	opts := []actor.PropsOption{actor.WithSupervisor(st), actor.WithMailbox(pamailbox.Producer(mailbox.NewQuota(0, 0)))}
	if top {
		opts = append(opts, actor.WithGuardian(RootStrategy(supervisor.DefaultConfig(), tr.reg)))
	}
	return actor.PropsFromProducer(func() actor.Actor { return &node{tr: tr} }, opts...)
}

// spawn starts a top-level actor and waits until every actor listed in
// want has started.
func (tr *tree) spawn(name string, want ...string) *actor.PID {
	tr.t.Helper()
	path := "/" + name
	if err := tr.reg.Add(path, supervisor.RootPath, "test", nil); err != nil {
		tr.t.Fatal(err)
	}
	pid, err := tr.sys.Root.SpawnNamed(tr.props(path, true), name)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.expect(want...)
	return pid
}

// expect waits for the given events, in any order, ignoring others.
func (tr *tree) expect(events ...string) {
	tr.t.Helper()
	want := map[string]int{}
	for _, e := range events {
		want[e]++
	}
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for len(want) > 0 {
		select {
		case e := <-tr.events:
			if want[e] > 0 {
				want[e]--
				if want[e] == 0 {
					delete(want, e)
				}
			}
		case <-deadline.C:
			tr.t.Fatalf("missing events %v", want)
		}
	}
}

func (tr *tree) startCount(path string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.starts[path]
}

func (tr *tree) node(path string) supervisor.Node {
	tr.t.Helper()
	n, ok := tr.reg.Find(path)
	if !ok {
		tr.t.Fatalf("%s not in registry:\n%s", path, tr.reg.Snapshot())
	}
	return n
}

func pid(sys *actor.ActorSystem, path string) *actor.PID {
	return sys.NewLocalPID(strings.TrimPrefix(path, "/"))
}

func TestStrategy_OneForOneRestartsWithinIntensity(t *testing.T) {
	tr := newTree(t)
	tr.kids["/p"] = []string{"a", "b"}
	tr.spawn("p", "started /p", "started /p/a", "started /p/b")

	for i := 1; i <= 3; i++ {
		tr.sys.Root.Send(pid(tr.sys, "/p/a"), &crash{err: errBoom})
		tr.expect("started /p/a")
		a := tr.node("/p/a")
		if a.Restarts != i || a.State != supervisor.Running {
			t.Fatalf("after crash %d: a = %+v", i, a)
		}
		if a.LastFailure == nil || !strings.Contains(a.LastFailure.Reason, "boom") ||
			!strings.Contains(a.LastFailure.Stack, "goroutine") {
			t.Fatalf("last failure = %+v", a.LastFailure)
		}
	}
	if b := tr.node("/p/b"); b.Restarts != 0 || tr.startCount("/p/b") != 1 {
		t.Fatalf("sibling touched: %+v", b)
	}
	if p := tr.node("/p"); p.Restarts != 0 {
		t.Fatalf("parent restarted: %+v", p)
	}
}

func TestStrategy_EscalatesPastIntensity(t *testing.T) {
	tr := newTree(t)
	tr.configs["/g/p"] = supervisor.Config{MaxRestarts: 1, Within: time.Minute}
	tr.kids["/g"] = []string{"p"}
	tr.kids["/g/p"] = []string{"a"}
	tr.spawn("g", "started /g", "started /g/p", "started /g/p/a")

	tr.sys.Root.Send(pid(tr.sys, "/g/p/a"), &crash{err: errBoom})
	tr.expect("started /g/p/a")
	if a := tr.node("/g/p/a"); a.Restarts != 1 {
		t.Fatalf("a = %+v", a)
	}

	// Second failure within the window: p escalates to g, g (one-for-one)
	// restarts p, which stops a and spawns a fresh one.
	tr.sys.Root.Send(pid(tr.sys, "/g/p/a"), &crash{err: errBoom})
	tr.expect("stopped /g/p/a", "started /g/p", "started /g/p/a")
	p := tr.node("/g/p")
	if p.Restarts != 1 || p.State != supervisor.Running || p.LastFailure == nil ||
		!strings.Contains(p.LastFailure.Reason, "boom") {
		t.Fatalf("p after escalation = %+v", p)
	}
	if a := tr.node("/g/p/a"); a.Restarts != 0 || a.State != supervisor.Running {
		t.Fatalf("fresh a = %+v", a)
	}
	if g := tr.node("/g"); g.Restarts != 0 {
		t.Fatalf("g = %+v", g)
	}
}

func TestStrategy_RootStopsPastIntensity(t *testing.T) {
	tr := newTree(t)
	root := RootStrategy(supervisor.Config{MaxRestarts: 1, Within: time.Minute}, tr.reg)
	if err := tr.reg.Add("/solo", supervisor.RootPath, "test", nil); err != nil {
		t.Fatal(err)
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &node{tr: tr} }, actor.WithGuardian(root),
		actor.WithMailbox(pamailbox.Producer(mailbox.NewQuota(0, 0))))
	solo, err := tr.sys.Root.SpawnNamed(props, "solo")
	if err != nil {
		t.Fatal(err)
	}
	tr.expect("started /solo")
	tr.sys.Root.Send(solo, &crash{err: errBoom})
	tr.expect("started /solo")
	tr.sys.Root.Send(solo, &crash{err: errBoom})
	tr.expect("stopped /solo")
	if _, ok := tr.reg.Find("/solo"); ok {
		t.Fatal("stopped actor still registered")
	}
}

func TestStrategy_AllForOneRestartsSiblings(t *testing.T) {
	tr := newTree(t)
	tr.configs["/p"] = supervisor.Config{Kind: supervisor.AllForOne}
	tr.kids["/p"] = []string{"a", "b", "c"}
	tr.spawn("p", "started /p", "started /p/a", "started /p/b", "started /p/c")

	tr.sys.Root.Send(pid(tr.sys, "/p/b"), &crash{err: errBoom})
	tr.expect("started /p/a", "started /p/b", "started /p/c")
	for _, k := range []string{"/p/a", "/p/b", "/p/c"} {
		if n := tr.node(k); n.Restarts != 1 || tr.startCount(k) != 2 {
			t.Fatalf("%s: %+v starts=%d", k, n, tr.startCount(k))
		}
	}
	if a := tr.node("/p/a"); a.LastFailure != nil {
		t.Fatalf("sibling got the failure recorded: %+v", a.LastFailure)
	}
}

func TestStrategy_UnrecoverableStops(t *testing.T) {
	tr := newTree(t)
	tr.kids["/p"] = []string{"a"}
	tr.spawn("p", "started /p", "started /p/a")
	tr.sys.Root.Send(pid(tr.sys, "/p/a"), &crash{err: fmt.Errorf("corrupt state: %w", supervisor.ErrUnrecoverable)})
	tr.expect("stopped /p/a")
	if tr.startCount("/p/a") != 1 {
		t.Fatalf("unrecoverable child restarted")
	}
}

type timerCall struct {
	d time.Duration
	f func()
}

func TestStrategy_BackoffDelaysRestart(t *testing.T) {
	tr := newTree(t)
	tr.configs["/p"] = supervisor.Config{MaxRestarts: 10, Within: time.Minute, Backoff: 10 * time.Millisecond, MaxBackoff: 25 * time.Millisecond}
	tr.kids["/p"] = []string{"a"}
	tr.spawn("p", "started /p", "started /p/a")
	timers := make(chan timerCall, 8)
	tr.mu.Lock()
	tr.strats["/p"].after = func(d time.Duration, f func()) { timers <- timerCall{d, f} }
	tr.mu.Unlock()

	for i, want := range []time.Duration{10, 20, 25, 25} {
		want *= time.Millisecond
		tr.sys.Root.Send(pid(tr.sys, "/p/a"), &crash{err: errBoom})
		var tc timerCall
		select {
		case tc = <-timers:
		case <-time.After(10 * time.Second):
			t.Fatal("no restart scheduled")
		}
		if tc.d != want {
			t.Fatalf("restart %d delay = %v, want %v", i+1, tc.d, want)
		}
		// Until the timer fires the child is not restarted.
		if a := tr.node("/p/a"); a.State != supervisor.Restarting || tr.startCount("/p/a") != i+1 {
			t.Fatalf("before timer: %+v starts=%d", a, tr.startCount("/p/a"))
		}
		tc.f()
		tr.expect("started /p/a")
		if a := tr.node("/p/a"); a.State != supervisor.Running || a.Restarts != i+1 {
			t.Fatalf("after timer: %+v", a)
		}
	}
}

func TestStrategy_BackoffSequence(t *testing.T) {
	s := newStrategy(supervisor.Config{Backoff: time.Second}, supervisor.NewRegistry(), false)
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 100: 0} {
		got := s.backoff(n)
		if want == 0 {
			if got <= 0 {
				t.Fatalf("backoff(%d) overflowed: %v", n, got)
			}
			continue
		}
		if got != want {
			t.Fatalf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
	if d := newStrategy(supervisor.Config{}, supervisor.NewRegistry(), false).backoff(3); d != 0 {
		t.Fatalf("no backoff configured, got %v", d)
	}
}

func TestConfig_InvalidPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("invalid kind accepted")
		}
	}()
	Strategy(supervisor.Config{Kind: 9}, supervisor.NewRegistry())
}
