package pamailbox

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/mailbox"
)

// recInvoker records what the mailbox hands over; it runs on the caller's
// goroutine (synchronized dispatcher), so tests read it directly.
type recInvoker struct {
	sys       []any
	user      []any
	failures  []any
	onUser    func(any)
	q         *mailbox.Quota
	depthSeen []int64
}

func (r *recInvoker) InvokeSystemMessage(m any) { r.sys = append(r.sys, m) }
func (r *recInvoker) InvokeUserMessage(m any) {
	r.depthSeen = append(r.depthSeen, r.q.Stats().Depth)
	r.user = append(r.user, m)
	if r.onUser != nil {
		r.onUser(m)
	}
}
func (r *recInvoker) EscalateFailure(reason, _ any) { r.failures = append(r.failures, reason) }

func newSync(q *mailbox.Quota) (*Mailbox, *recInvoker) {
	m := Producer(q)().(*Mailbox)
	inv := &recInvoker{q: q}
	m.RegisterHandlers(inv, actor.NewSynchronizedDispatcher(300))
	return m, inv
}

type sysPing struct{}

func TestMailbox_SystemMessagesBypassFullBudget(t *testing.T) {
	q := mailbox.NewQuota(2, 0)
	m, inv := newSync(q)
	m.PostSystemMessage(&actor.SuspendMailbox{})
	for i := range 2 {
		if err := q.Admit(1); err != nil {
			t.Fatal(err)
		}
		m.PostUserMessage(Wrap(i, 1))
	}
	if err := q.Admit(1); !errors.Is(err, mailbox.ErrMailboxFull) {
		t.Fatalf("third Admit = %v, want full", err)
	}
	m.PostSystemMessage(&sysPing{})
	if len(inv.sys) != 1 || len(inv.user) != 0 {
		t.Fatalf("while suspended: sys=%v user=%v", inv.sys, inv.user)
	}
	if st := q.Stats(); st.Depth != 2 || m.UserMessageCount() != 2 {
		t.Fatalf("depth %d, count %d", st.Depth, m.UserMessageCount())
	}
	m.PostSystemMessage(&actor.ResumeMailbox{})
	if fmt.Sprint(inv.user) != "[0 1]" {
		t.Fatalf("user after resume = %v", inv.user)
	}
	st := q.Stats()
	if st.Depth != 0 || st.Processed != 2 {
		t.Fatalf("after resume: %+v", st)
	}
}

func TestMailbox_UnwrapsEnvelopesAndReleasesBytes(t *testing.T) {
	q := mailbox.NewQuota(0, 100)
	m, inv := newSync(q)
	sender := actor.NewPID("nonhost", "s")
	if err := q.Admit(40); err != nil {
		t.Fatal(err)
	}
	var during mailbox.Stats
	inv.onUser = func(any) { during = q.Stats() }
	m.PostUserMessage(&actor.MessageEnvelope{Message: Wrap("hello", 40), Sender: sender})
	if len(inv.user) != 1 {
		t.Fatalf("user = %v", inv.user)
	}
	env, ok := inv.user[0].(*actor.MessageEnvelope)
	if !ok || env.Message != "hello" || env.Sender != sender {
		t.Fatalf("invoked with %#v", inv.user[0])
	}
	if during.Bytes != 40 || during.Depth != 1 {
		t.Fatalf("during handler: %+v, want the message still counted", during)
	}
	if st := q.Stats(); st.Bytes != 0 || st.Depth != 0 || st.Processed != 1 {
		t.Fatalf("after: %+v", st)
	}
}

func TestMailbox_UnbudgetedMessagesCountInDepthOnly(t *testing.T) {
	q := mailbox.NewQuota(1, 0)
	m, inv := newSync(q)
	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.PostUserMessage(&actor.PoisonPill{})
	if st := q.Stats(); st.Depth != 1 {
		t.Fatalf("depth = %d, want 1", st.Depth)
	}
	if err := q.Admit(0); err != nil {
		t.Fatalf("unbudgeted message took budget: %v", err)
	}
	m.PostUserMessage(Wrap("x", 0))
	m.PostSystemMessage(&actor.ResumeMailbox{})
	if len(inv.user) != 2 {
		t.Fatalf("user = %v", inv.user)
	}
	if st := q.Stats(); st.Depth != 0 || st.Processed != 1 {
		t.Fatalf("after: %+v", st)
	}
}

func TestMailbox_PanicEscalatesWithStackAndReleases(t *testing.T) {
	q := mailbox.NewQuota(4, 100)
	m, inv := newSync(q)
	inv.onUser = func(msg any) {
		if msg == "boom" {
			panic("kaboom")
		}
	}
	for _, s := range []string{"boom", "after"} {
		if err := q.Admit(10); err != nil {
			t.Fatal(err)
		}
		m.PostUserMessage(Wrap(s, 10))
	}
	if len(inv.failures) != 1 {
		t.Fatalf("failures = %v", inv.failures)
	}
	p, ok := inv.failures[0].(*mailbox.Panic)
	if !ok || p.Value != "kaboom" || len(p.Stack) == 0 {
		t.Fatalf("failure = %#v", inv.failures[0])
	}
	// The panicking message was released; the next one still runs (a real
	// actor would have suspended itself via EscalateFailure).
	if st := q.Stats(); st.Bytes != 0 || st.Processed != 2 {
		t.Fatalf("after panic: %+v", st)
	}
}

// counter is an actor that records every unique id it sees and checks the
// budgets from inside the handler. Each message first waits for gate
// (closed once: only the first waits long), so a test can keep the actor
// from draining its mailbox until a producer has been refused.
type counter struct {
	gate     <-chan struct{}
	q        *mailbox.Quota
	maxM     int64
	maxB     int64
	mu       *sync.Mutex
	seen     map[int]int
	violated *atomic.Bool
	total    *atomic.Int64
}

type idMsg struct {
	id   int
	size int64
}

func (c *counter) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*idMsg)
	if !ok {
		return
	}
	<-c.gate
	st := c.q.Stats()
	if st.Depth > c.maxM || st.Bytes > c.maxB || st.Bytes < m.size {
		c.violated.Store(true)
	}
	c.mu.Lock()
	c.seen[m.id]++
	c.mu.Unlock()
	c.total.Add(1)
}

func TestMailbox_ConcurrentProducersRespectBudgets(t *testing.T) {
	const (
		producers = 16
		perProd   = 500
		maxM      = 8
		maxB      = 200
	)
	sys := actor.NewActorSystem()
	q := mailbox.NewQuota(maxM, maxB)
	// The actor holds its first message until a producer has been refused
	// (or a generous deadline passes, and the final check fails): without
	// it the refusals depend on producers outpacing the actor, which a
	// machine with many cores need not do.
	gate := make(chan struct{})
	var gateOnce sync.Once
	openGate := func() { gateOnce.Do(func() { close(gate) }) }
	gateTimer := time.AfterFunc(10*time.Second, openGate)
	defer gateTimer.Stop()
	c := &counter{gate: gate, q: q, maxM: maxM, maxB: maxB, mu: &sync.Mutex{}, seen: map[int]int{},
		violated: &atomic.Bool{}, total: &atomic.Int64{}}
	pid, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return c },
		actor.WithMailbox(Producer(q))), "counter")
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Root.Stop(pid)

	var wg sync.WaitGroup
	var admitted atomic.Int64
	admittedIDs := make([][]int, producers)
	errs := make(chan error, producers)
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProd {
				id := g*perProd + i
				size := int64(id % 40)
				err := q.Admit(size)
				if err != nil {
					var fe *mailbox.FullError
					if !errors.As(err, &fe) {
						errs <- err
						return
					}
					openGate()
					// The refusal names a budget that really was spent.
					switch fe.Budget {
					case mailbox.BudgetMessages:
						if fe.Current < maxM || fe.Max != maxM {
							errs <- fmt.Errorf("bad message refusal %+v", fe)
							return
						}
					case mailbox.BudgetBytes:
						if fe.Current+size <= maxB || fe.Max != maxB {
							errs <- fmt.Errorf("bad byte refusal %+v size %d", fe, size)
							return
						}
					default:
						errs <- fmt.Errorf("bad budget %v", fe.Budget)
						return
					}
					continue
				}
				if st := q.Stats(); st.Depth > maxM || st.Bytes > maxB {
					errs <- fmt.Errorf("sender saw %+v", st)
					return
				}
				admitted.Add(1)
				admittedIDs[g] = append(admittedIDs[g], id)
				sys.Root.Send(pid, Wrap(&idMsg{id: id, size: size}, size))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.total.Load() == admitted.Load() })
	if c.violated.Load() {
		t.Fatal("budget exceeded inside the actor")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ids := range admittedIDs {
		for _, id := range ids {
			if c.seen[id] != 1 {
				t.Fatalf("id %d processed %d times", id, c.seen[id])
			}
			n++
		}
	}
	if len(c.seen) != n {
		t.Fatalf("processed %d distinct ids, admitted %d", len(c.seen), n)
	}
	st := q.Stats()
	if st.Depth != 0 || st.Bytes != 0 || st.Processed != admitted.Load() ||
		st.Admitted+st.Rejected != producers*perProd || st.Rejected == 0 {
		t.Fatalf("final stats %+v (admitted %d)", st, admitted.Load())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal("condition not met before deadline")
		case <-tick.C:
		}
	}
}

// keeper is a message that takes its budget over when keep is set.
type keeper struct{ keep bool }

func (k *keeper) KeptBudget() bool { return k.keep }

func TestMailbox_KeptBudgetIsLeftToTheKeeper(t *testing.T) {
	q := mailbox.NewQuota(10, 100)
	m, _ := newSync(q)
	for _, keep := range []bool{false, true} {
		if err := q.Admit(30); err != nil {
			t.Fatal(err)
		}
		m.PostSized(&keeper{keep: keep}, 30)
	}
	// The first released its budget as usual; the second is still counted
	// (and not processed) until its keeper releases it.
	if st := q.Stats(); st.Depth != 1 || st.Bytes != 30 || st.Processed != 1 {
		t.Fatalf("after both ran: %+v, want the kept one still counted", st)
	}
	q.Release(30)
	if st := q.Stats(); st.Depth != 0 || st.Bytes != 0 || st.Processed != 2 {
		t.Fatalf("after the keeper released: %+v", st)
	}
}

// taskDispatcher runs tasks at once and counts how each kind of schedule
// came.
type taskDispatcher struct{ tasks, funcs int }

func (d *taskDispatcher) Schedule(fn func()) { d.funcs++; fn() }
func (d *taskDispatcher) Throughput() int    { return 300 }
func (d *taskDispatcher) ScheduleTask(t Task) {
	d.tasks++
	RunTask(t)
}

// A mailbox whose dispatcher takes tasks schedules itself as one: no
// method value allocated per schedule.
func TestMailbox_SchedulesAsATask(t *testing.T) {
	q := mailbox.NewQuota(0, 0)
	m := Producer(q)().(*Mailbox)
	inv := &recInvoker{q: q}
	d := &taskDispatcher{}
	m.RegisterHandlers(inv, d)
	for i := range 3 {
		m.PostSized(i, 1)
	}
	if d.tasks != 3 || d.funcs != 0 || len(inv.user) != 3 {
		t.Fatalf("tasks %d, funcs %d, messages run %v", d.tasks, d.funcs, inv.user)
	}
	if n := testing.AllocsPerRun(100, func() { m.PostSized(0, 1) }); n != 0 {
		t.Fatalf("%v allocations per post and run", n)
	}
}
