package pamailbox

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/internal/mbacct"
	"github.com/zlink-go/zlink/mailbox"
)

// sized carries a user message and the bytes it was admitted with. Senders
// get one from Wrap; the mailbox unwraps it and returns it to the pool.
type sized struct {
	msg  any
	size int64
}

var sizedPool = sync.Pool{New: func() any { return new(sized) }}

// Wrap returns a pooled wrapper that carries msg and the size it was admitted
// with. Call it only after a successful (*mailbox.Quota).Admit(size) on the target's
// quota, and post the result (or a *actor.MessageEnvelope whose Message is
// the result) to the target exactly once, through protoactor: the mailbox
// unwraps it when it is posted (returning the wrapper to the pool on the
// sender's goroutine), hands msg to the actor and releases size after the
// handler returns. A wrapper that never reaches the mailbox (the target is
// gone) is garbage-collected and its reservation is not released.
func Wrap(msg any, size int64) any {
	w := sizedPool.Get().(*sized)
	w.msg, w.size = msg, size
	return w
}

const (
	idle int32 = iota
	running
)

// batchSize is how many user messages the consumer takes from the shared
// queue per lock acquisition.
const batchSize = 64

// Producer returns a protoactor MailboxProducer whose mailboxes account
// against q. One quota belongs to one actor.
func Producer(q *mailbox.Quota) actor.MailboxProducer {
	return func() actor.Mailbox { return New(q) }
}

// Mailbox is a protoactor Mailbox with a user queue accounted in a
// mailbox.Quota and a separate system queue that bypasses budgets and is
// drained first.
//
// Lock order: mu is a leaf; nothing is called while holding it.
type Mailbox struct {
	q mbacct.Account // the quota's accounting

	mu   sync.Mutex
	user ring // guarded by mu
	sys  ring // guarded by mu

	userCount atomic.Int32 // user messages in the shared queue (not the staged batch)
	sysCount  atomic.Int32
	status    atomic.Int32
	suspended atomic.Bool

	// Owned by the goroutine running process: the staged user messages
	// (borrowed from a pool while the mailbox runs, so an idle mailbox
	// holds none) and the count of processed messages not yet published
	// to the quota.
	batch  *[batchSize]entry
	bi, bn int
	done   int64
	relN   int64 // processed messages whose budget is not yet released
	relB   int64 // and their bytes

	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
}

var _ actor.Mailbox = (*Mailbox)(nil)

// New returns a mailbox accounting against q. Give it to exactly one actor,
// through its Producer.
func New(q *mailbox.Quota) *Mailbox {
	return &Mailbox{q: mbacct.Of(q)}
}

// Producer returns a MailboxProducer that hands out m itself; use it for
// one spawn only.
func (m *Mailbox) Producer() actor.MailboxProducer {
	return func() actor.Mailbox { return m }
}

// PostSized queues msg (a user message, or a *actor.MessageEnvelope around
// one) that was admitted with q.Admit(size). It is the direct, wrapper-free
// form of posting Wrap(msg, size) through protoactor.
func (m *Mailbox) PostSized(msg any, size int64) {
	m.push(entry{msg: msg, size: size, budgeted: true})
}

// PostUserMessage queues a user message. Wrapped messages were admitted by
// the sender and are unwrapped here; anything else (PoisonPill and other
// protoactor internals) is queued without budget but counted in the depth.
func (m *Mailbox) PostUserMessage(message any) {
	switch v := message.(type) {
	case *sized:
		e := entry{msg: v.msg, size: v.size, budgeted: true}
		v.msg = nil
		sizedPool.Put(v)
		m.push(e)
		return
	case *actor.MessageEnvelope:
		if w, ok := v.Message.(*sized); ok {
			v.Message = w.msg
			e := entry{msg: v, size: w.size, budgeted: true}
			w.msg = nil
			sizedPool.Put(w)
			m.push(e)
			return
		}
	}
	m.q.AddFree(1)
	m.push(entry{msg: message})
}

func (m *Mailbox) push(e entry) {
	m.mu.Lock()
	m.user.push(e)
	m.mu.Unlock()
	m.userCount.Add(1)
	m.schedule()
}

// PostSystemMessage queues a system message; it bypasses all budgets.
func (m *Mailbox) PostSystemMessage(message any) {
	m.mu.Lock()
	m.sys.push(entry{msg: message})
	m.mu.Unlock()
	m.sysCount.Add(1)
	m.schedule()
}

// RegisterHandlers sets the invoker and the dispatcher.
func (m *Mailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker = invoker
	m.dispatcher = dispatcher
}

// Start does nothing: the mailbox has no middlewares.
func (m *Mailbox) Start() {}

// UserMessageCount returns the number of user messages waiting in the
// shared queue (a batch the consumer has already taken is not included).
func (m *Mailbox) UserMessageCount() int { return int(m.userCount.Load()) }

func (m *Mailbox) schedule() {
	// Load first: while the mailbox runs, producers only read the status
	// word instead of contending for it.
	if m.status.Load() == idle && m.status.CompareAndSwap(idle, running) {
		if td, ok := m.dispatcher.(TaskDispatcher); ok {
			td.ScheduleTask(m) // no method value to allocate per schedule
		} else {
			m.dispatcher.Schedule(m.process)
		}
	}
}

// Task is a mailbox's run as a TaskDispatcher takes it: an interface
// value holding the mailbox, where a func() would be a method value
// allocated per schedule. RunTask runs it.
type Task interface{ runTask() }

func (m *Mailbox) runTask() { m.process() }

// RunTask runs t (on the goroutine a TaskDispatcher chose for it).
func RunTask(t Task) { t.runTask() }

// TaskDispatcher is a protoactor Dispatcher that also takes a mailbox's
// run as a Task; a mailbox schedules itself with ScheduleTask when its
// dispatcher has it.
type TaskDispatcher interface {
	actor.Dispatcher
	ScheduleTask(t Task)
}

func (m *Mailbox) process() {
	for {
		m.run()
		m.publish()
		staged := m.bi < m.bn // read before giving up ownership
		if !staged && m.batch != nil {
			batchPool.Put(m.batch)
			m.batch = nil
		}
		m.status.Store(idle)
		sys := m.sysCount.Load()
		user := m.userCount.Load()
		if sys == 0 && (m.suspended.Load() || (user == 0 && !staged)) {
			return
		}
		if !m.status.CompareAndSwap(idle, running) {
			return
		}
	}
}

// publish gives the quota back what was processed since the last publish:
// the budget of those messages and the processed count.
func (m *Mailbox) publish() {
	if m.relN > 0 {
		m.q.ReleaseN(m.relN, m.relB)
		m.relN, m.relB = 0, 0
	}
	if m.done > 0 {
		m.q.AddProcessed(m.done)
		m.done = 0
	}
}

// releaseBatch is how many processed messages the consumer releases at once
// at most. A processed message may therefore still count against the budget
// for a few more messages: admission errs on the safe side, never over.
const releaseBatch = 16

func (m *Mailbox) run() {
	i, t := 0, m.dispatcher.Throughput()
	for {
		if i > t {
			i = 0
			runtime.Gosched()
		}
		i++

		if m.sysCount.Load() > 0 {
			m.mu.Lock()
			e := m.sys.pop()
			m.mu.Unlock()
			m.sysCount.Add(-1)
			switch e.msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended.Store(true)
			case *actor.ResumeMailbox:
				m.suspended.Store(false)
			default:
				if !m.invokeSystem(e.msg) {
					return
				}
			}
			continue
		}

		if m.suspended.Load() {
			return
		}

		if m.bi == m.bn {
			m.publish()
			if m.batch == nil {
				m.batch = batchPool.Get().(*[batchSize]entry)
			}
			m.mu.Lock()
			n := 0
			for n < batchSize && m.user.n > 0 {
				m.batch[n] = m.user.pop()
				n++
			}
			m.mu.Unlock()
			m.bi, m.bn = 0, n
			if n == 0 {
				return
			}
			m.userCount.Add(int32(-n))
		}
		e := m.batch[m.bi]
		m.batch[m.bi] = entry{}
		m.bi++
		if !m.invokeUser(e) {
			return
		}
	}
}

// invokeSystem runs one system message; it reports false after a panic,
// which it has escalated.
func (m *Mailbox) invokeSystem(msg any) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			m.invoker.EscalateFailure(&mailbox.Panic{Value: r, Stack: debug.Stack()}, msg)
		}
	}()
	m.invoker.InvokeSystemMessage(msg)
	return true
}

// invokeUser runs one user message and releases its budget after the
// handler returned or panicked; it reports false after a panic, which it has
// escalated.
func (m *Mailbox) invokeUser(e entry) (ok bool) {
	defer func() {
		if e.budgeted && kept(e.msg) {
			// The message took its budget over: its keeper releases it.
		} else if e.budgeted {
			m.relN++
			m.relB += e.size
			m.done++
			if m.relN >= releaseBatch {
				m.publish()
			}
		} else {
			m.q.AddFree(-1)
		}
		if r := recover(); r != nil {
			ok = false
			m.publish()
			m.invoker.EscalateFailure(&mailbox.Panic{Value: r, Stack: debug.Stack()}, e.msg)
		}
	}()
	m.invoker.InvokeUserMessage(e.msg)
	return true
}

// DrainUser removes every user message still queued (staged or waiting),
// releases their budgets and hands each budgeted one to fn. The actor
// system calls it once the actor has stopped, from the actor's own turn
// (the consumer goroutine), so nothing it admitted is lost silently.
func (m *Mailbox) DrainUser(fn func(msg any)) {
	if m.batch == nil {
		m.batch = batchPool.Get().(*[batchSize]entry)
	}
	defer func() {
		if m.bi == m.bn {
			batchPool.Put(m.batch)
			m.batch = nil
		}
	}()
	for {
		for m.bi < m.bn {
			e := m.batch[m.bi]
			m.batch[m.bi] = entry{}
			m.bi++
			m.drop(e, fn)
		}
		m.mu.Lock()
		n := 0
		for n < batchSize && m.user.n > 0 {
			m.batch[n] = m.user.pop()
			n++
		}
		m.mu.Unlock()
		m.bi, m.bn = 0, n
		if n == 0 {
			m.publish()
			return
		}
		m.userCount.Add(int32(-n))
	}
}

func (m *Mailbox) drop(e entry, fn func(any)) {
	if !e.budgeted {
		m.q.AddFree(-1)
		return
	}
	m.relN++
	m.relB += e.size
	m.done++
	fn(e.msg)
}

// entry is one queued message with the bytes it holds in the quota.
type entry struct {
	msg      any
	size     int64
	budgeted bool
}

// ring is a growable FIFO ring buffer. It is not safe for concurrent use;
// Mailbox guards it with its mutex. It allocates only when it grows.
type ring struct {
	buf  []entry
	head int
	n    int
}

func (r *ring) push(v entry) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

func (r *ring) pop() entry {
	if r.n == 0 {
		return entry{}
	}
	v := r.buf[r.head]
	r.buf[r.head] = entry{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if r.n == 0 {
		// Empty: give the buffer back, so an idle mailbox holds none (an
		// actor system may hold a million idle actors). Every slot is
		// cleared already.
		putRing(r.buf)
		r.buf, r.head = nil, 0
	}
	return v
}

// ringMin is the first size of a ring buffer. Buffers of ringMin up to
// ringMin<<ringClasses-1 entries are pooled by size, so a busy mailbox that
// empties between bursts (and gives its buffer back) does not allocate its
// way up again on the next burst; a pool holds them only until the
// collector reclaims them.
const (
	ringMin     = 16
	ringClasses = 13 // up to 64Ki entries (2 MiB)
)

var (
	ringPools [ringClasses]sync.Pool
	batchPool = sync.Pool{New: func() any { return new([batchSize]entry) }}
)

// ringClass returns the pool index of a buffer of size entries, or -1.
func ringClass(size int) int {
	for c := 0; c < ringClasses; c++ {
		if size == ringMin<<c {
			return c
		}
	}
	return -1
}

// getRing returns a cleared buffer of size entries (a power of two ≥ ringMin).
func getRing(size int) []entry {
	if c := ringClass(size); c >= 0 {
		if p, ok := ringPools[c].Get().(*entry); ok {
			return unsafe.Slice(p, size)
		}
	}
	return make([]entry, size)
}

// putRing pools a buffer whose slots are all cleared. The pool holds the
// pointer to its first entry (no allocation for a slice header); the
// buffer's size is its class's.
func putRing(buf []entry) {
	if c := ringClass(len(buf)); c >= 0 {
		ringPools[c].Put(unsafe.SliceData(buf))
	}
}

func (r *ring) grow() {
	if len(r.buf) == 0 {
		r.buf, r.head = getRing(ringMin), 0
		return
	}
	buf := getRing(len(r.buf) * 2)
	for i := 0; i < r.n; i++ {
		j := (r.head + i) & (len(r.buf) - 1)
		buf[i] = r.buf[j]
		r.buf[j] = entry{}
	}
	putRing(r.buf)
	r.buf, r.head = buf, 0
}

// kept reports whether msg took its budget over (mailbox.BudgetKeeper).
func kept(msg any) bool {
	k, ok := msg.(mailbox.BudgetKeeper)
	return ok && k.KeptBudget()
}
