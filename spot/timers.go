package spot

import (
	"encoding/binary"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/spot/internal/timers"
	"github.com/zlink-go/zlink/wire"
)

// Limits of a Spot's timers.
const (
	// MaxTimers is the number of timers one Spot may hold.
	MaxTimers = 64
	// MaxTimerPayload bounds a timer's payload.
	MaxTimerPayload = 64 << 10
	// MinTimerPeriod is the shortest period of a repeating timer.
	MinTimerPeriod = time.Millisecond
	// timerRetry is when a firing that found the Spot's mailbox full is
	// tried again (one-shot timers; repeating ones fire at their next due
	// time, the missed one merged).
	timerRetry = 10 * time.Millisecond
	// postBurst is how many firings the clock posts before it yields.
	postBurst = 64
)

// Timer is one timer of a Spot: data, not a closure. Each firing is a
// turn of the Spot, serial with its messages, that runs the kind's handler
// for Packet (an OnSend handler, or an On handler whose reply goes
// nowhere) with Payload; the handler's Context has Source "timer".
type Timer struct {
	// Name names the timer within its Spot; starting a name again
	// replaces the timer.
	Name string
	// Due is when it first fires, from now (0: at once).
	Due time.Duration
	// Period repeats it at a fixed rate: due, due+period, due+2·period, …
	// whatever a turn costs (0: it fires once). A firing that finds the
	// previous one still waiting, or a clock stalled past several due
	// times, fires once and counts the rest as merged.
	Period time.Duration
	// Packet and Payload are what each firing delivers.
	Packet  string
	Payload []byte
}

// timerData is a timer as its Spot holds it (touched only by the Spot's
// turns, one at a time).
type timerData struct {
	Timer
	fire *timerFire
	// The kind's handler for Packet, looked up once.
	send sendFn
	req  requestFn
}

// newTimerData is t with its firing message and handler.
func newTimerData(reg *kindReg, t Timer, f *timerFire) *timerData {
	td := &timerData{Timer: t, fire: f, send: reg.sends[t.Packet]}
	if td.send == nil {
		td.req = reg.requests[t.Packet]
	}
	f.td = td
	return td
}

// replaceFire makes td's firings come from f; one of the old setting
// still queued is stale.
func (td *timerData) replaceFire(f *timerFire) {
	td.fire.stale = true
	td.fire, f.td = f, td
}

// timerFire is one setting of a timer (started, reset or restored) as the
// node's clock posts it into the Spot's mailbox: the same message for
// every firing of that setting, so a firing allocates nothing. At most
// one is queued at a time (pending); a due time that finds it still
// pending is merged, counted by the clock without a lock.
type timerFire struct {
	name    string
	act     *activation
	gen     uint64 // the schedule's generation of this setting
	once    bool   // a one-shot timer: the schedule forgets it once taken
	pending atomic.Bool
	// Touched only by the Spot's turns: the timer it fires, whether that
	// timer was cancelled or set again since, and the Context of its
	// turns (one per timer, reused: a firing allocates none).
	td    *timerData
	stale bool
	hc    Context
}

// Size is what a firing counts against the Spot's byte budget.
func (*timerFire) Size() int { return 64 }

// StartTimer starts (or replaces) a timer of the Spot whose turn c is. It
// fails with ErrConfig for a bad timer (no name, no handler for its
// packet, a period under MinTimerPeriod, a payload over MaxTimerPayload, a
// Spot already holding MaxTimers). Timers stop with the activation
// (deactivation, fence); a move carries them, with their remaining time,
// to the new owner.
func (c *Context) StartTimer(t Timer) error {
	if c == nil || c.act == nil || c.act.ref == nil {
		return fmt.Errorf("%w: a timer needs a Spot turn's Context", ErrConfig)
	}
	reg := c.ks.reg
	switch {
	case t.Name == "" || len(t.Name) > maxName:
		return fmt.Errorf("%w: timer name %.64q", ErrConfig, t.Name)
	case reg.sends[t.Packet] == nil && reg.requests[t.Packet] == nil:
		return fmt.Errorf("%w: kind %s has no handler for timer packet %q", ErrConfig, reg.name, t.Packet)
	case t.Due < 0 || t.Period < 0 || (t.Period > 0 && t.Period < MinTimerPeriod):
		return fmt.Errorf("%w: timer %s: due %v, period %v", ErrConfig, t.Name, t.Due, t.Period)
	case len(t.Payload) > MaxTimerPayload:
		return fmt.Errorf("%w: timer %s: payload of %d bytes, over %d", ErrConfig, t.Name, len(t.Payload), MaxTimerPayload)
	}
	a := c.act
	if _, ok := a.timers[t.Name]; !ok && len(a.timers) >= MaxTimers {
		return fmt.Errorf("%w: spot %s/%s holds %d timers already", ErrConfig, c.Kind, c.ID, MaxTimers)
	}
	t.Payload = append([]byte(nil), t.Payload...)
	f := c.rt.clock.set(a, t.Name, time.Now().Add(t.Due), t.Period)
	if a.timers == nil {
		a.timers = map[string]*timerData{}
	}
	if old := a.timers[t.Name]; old != nil {
		old.fire.stale = true
	}
	a.timers[t.Name] = newTimerData(reg, t, f)
	return nil
}

// StartTimerOf is StartTimer with a typed packet.
func StartTimerOf[Msg, Unused any](c *Context, name string, due, period time.Duration, p wire.Packet[Msg, Unused], msg Msg) error {
	b, err := p.EncodeRequest(msg)
	if err != nil {
		return err
	}
	return c.StartTimer(Timer{Name: name, Due: due, Period: period, Packet: p.Name(), Payload: b})
}

// ResetTimer restarts timer name's countdown: its next firing is its Due
// from now (its Period for a repeating timer already fired). It reports
// false when the Spot has no such timer.
func (c *Context) ResetTimer(name string) bool {
	if c == nil || c.act == nil {
		return false
	}
	td := c.act.timers[name]
	if td == nil {
		return false
	}
	td.replaceFire(c.rt.clock.set(c.act, name, time.Now().Add(td.Due), td.Period))
	return true
}

// CancelTimer stops timer name; a firing already queued does not run. It
// reports whether the Spot had such a timer.
func (c *Context) CancelTimer(name string) bool {
	if c == nil || c.act == nil || c.act.timers[name] == nil {
		return false
	}
	td := c.act.timers[name]
	td.fire.stale = true
	delete(c.act.timers, name)
	c.rt.clock.cancel(c.act, name)
	return true
}

// Timers lists the Spot's timers with the time left before each fires.
func (c *Context) Timers() []TimerInfo {
	if c == nil || c.act == nil {
		return nil
	}
	out := make([]TimerInfo, 0, len(c.act.timers))
	now := time.Now()
	for _, td := range c.act.timers {
		left, _ := c.rt.clock.left(c.act, td.Name, now)
		out = append(out, TimerInfo{Name: td.Name, Left: left, Period: td.Period, Packet: td.Packet})
	}
	return out
}

// TimerInfo describes one timer of a Spot.
type TimerInfo struct {
	Name   string
	Left   time.Duration // before its next firing
	Period time.Duration
	Packet string
}

// clock is the node's one timer clock: the schedule of every active
// Spot's timers (a pure machine behind a leaf mutex) and one goroutine
// that sleeps until the earliest due time and posts each firing into its
// Spot's mailbox. The schedule puts a repeating timer back itself, and a
// firing's pending flag lives in its message: a repeating timer's turn
// takes no lock.
type timerClock struct {
	rt      *runtime
	mu      sync.Mutex
	m       *timers.Machine
	wake    chan struct{} // cap 1: the earliest due time moved before sleepUntil
	running bool
	// sleepUntil is when the clock's goroutine wakes next (zero: not
	// before a change): a change earlier than that wakes it.
	sleepUntil time.Time

	merged, retried atomic.Uint64
}

func newClock(rt *runtime) *timerClock {
	return &timerClock{rt: rt, m: timers.New(), wake: make(chan struct{}, 1)}
}

// set schedules timer name of act and returns the message its firings
// post; the clock's goroutine starts with the first timer.
func (k *timerClock) set(act *activation, name string, due time.Time, period time.Duration) *timerFire {
	f := &timerFire{name: name, act: act, once: period <= 0}
	k.mu.Lock()
	f.gen = k.m.Set(timers.Key{Act: act.seq, Name: name}, due, period, f)
	start := !k.running
	k.running = true
	wake := k.earlierLocked(due)
	k.mu.Unlock()
	if start && !k.rt.goStore(k.run) {
		k.mu.Lock()
		k.running = false
		k.mu.Unlock()
	}
	if wake {
		k.poke()
	}
	return f
}

// earlierLocked reports whether due comes before the time the clock's
// goroutine sleeps until (then it must be woken).
func (k *timerClock) earlierLocked(due time.Time) bool {
	if k.sleepUntil.IsZero() || due.Before(k.sleepUntil) {
		k.sleepUntil = due
		return true
	}
	return false
}

func (k *timerClock) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *timerClock) cancel(act *activation, name string) {
	k.mu.Lock()
	k.m.Cancel(timers.Key{Act: act.seq, Name: name})
	k.mu.Unlock()
}

// cancelAll stops every timer of act (its activation ended).
func (k *timerClock) cancelAll(act *activation) {
	k.mu.Lock()
	k.m.CancelAll(act.seq)
	k.mu.Unlock()
}

// left is the time before timer name of act fires next.
func (k *timerClock) left(act *activation, name string, now time.Time) (time.Duration, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	due, _, _, ok := k.m.Due(timers.Key{Act: act.seq, Name: name})
	if !ok {
		return 0, false
	}
	return max(due.Sub(now), 0), true
}

// taken is the Spot's side of a firing, at the start of its turn: from
// now a due time posts the timer again. A one-shot timer is forgotten by
// the schedule; false means it changed since (the firing is stale).
func (k *timerClock) taken(f *timerFire) bool {
	f.pending.Store(false)
	if !f.once {
		return true // Tick has put it back already
	}
	k.mu.Lock()
	ok := k.m.Taken(timers.Key{Act: f.act.seq, Name: f.name}, f.gen)
	k.mu.Unlock()
	return ok
}

// run is the clock's goroutine: tick, post what is due, sleep until the
// next due time or a change; it ends with the runtime.
func (k *timerClock) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var fired []timers.Firing
	for {
		now := time.Now()
		k.mu.Lock()
		var next time.Time
		fired, next = k.m.Tick(now, fired[:0])
		k.sleepUntil = next
		k.mu.Unlock()
		for i := range fired {
			k.post(&fired[i], now)
			fired[i].Tag = nil
			if i%postBurst == postBurst-1 {
				// Let the turns posted run before posting more: a
				// mailbox scheduled waits for a worker goroutine, and
				// thousands scheduled at once would need thousands.
				goruntime.Gosched()
			}
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		t.Reset(wait)
		select {
		case <-k.rt.base.Done():
			return
		case <-k.wake:
			if !t.Stop() {
				<-t.C
			}
		case <-t.C:
		}
	}
}

// post hands one firing to its Spot. A firing whose last one is still
// pending is merged into it; one that finds the mailbox full is merged
// into the next due time (a one-shot timer is tried again shortly).
func (k *timerClock) post(d *timers.Firing, now time.Time) {
	f := d.Tag.(*timerFire)
	if !f.pending.CompareAndSwap(false, true) {
		k.merged.Add(uint64(d.Merged) + 1)
		return
	}
	k.merged.Add(uint64(d.Merged))
	if f.act.ref.Tell(f) == nil {
		return
	}
	f.pending.Store(false)
	k.retried.Add(1)
	if !f.once {
		k.merged.Add(1)
		return
	}
	k.mu.Lock()
	k.m.Retry(d.Key, d.Gen, now.Add(timerRetry))
	wake := k.earlierLocked(now.Add(timerRetry))
	k.mu.Unlock()
	if wake {
		k.poke()
	}
}

// fire runs one firing of a timer as a turn of the Spot: the kind's
// handler for the timer's packet, with its payload. A stale firing (the
// timer was cancelled or set again meanwhile) runs nothing.
func (a *spotActor) fire(c *actors.Context, f *timerFire) {
	if a.gone || f.stale {
		return
	}
	td, rt, reg := f.td, a.rt, a.ks.reg
	if !rt.clock.taken(f) {
		return
	}
	if f.once {
		delete(a.act.timers, f.name)
	}
	now := time.Now()
	if !rt.valid(a.act, now) {
		return // a fenced owner runs nothing; its timers end with it
	}
	if reg.timerUse {
		a.act.touch(now)
	}
	if a.reread && a.reload() != nil {
		a.reread = false // as for a reply: go on from the state in memory
	}
	prev := a.act.turn.Load()
	a.turns++
	a.act.turn.Store(a.turns)
	// A timer turn has no caller and no deadline of its own: the runtime's
	// context (a timer per firing would cost more than the firing). Its
	// Context is the timer's own, filled as turnContext does.
	t := a.enter()
	hc := &f.hc
	*hc = Context{Context: rt.base, Kind: reg.name, ID: a.act.id, Epoch: a.act.epoch, Source: SourceTimer,
		Node: rt.n, act: a.act, rt: rt, ks: a.ks, turn: t}
	if td.send != nil {
		td.send(hc, a.state, td.Payload)
	} else if td.req != nil {
		_, _ = td.req(hc, a.state, td.Payload) // nobody waits for the reply
	}
	a.leave(c, t)
	a.act.turn.Store(prev)
	rt.stats.timerTurns.Add(1)
	a.ks.turns.count(td.Packet, SourceTimer, nil)
	a.changed()
}

// restoreTimers carries a moved Spot's timers to its new activation:
// each starts again with the time it had left.
type restoreTimers struct{ data []byte }

func (a *spotActor) restoreTimers(m *restoreTimers) {
	ts, err := decodeTimers(m.data)
	if err != nil {
		a.rt.log.Warn().Err(err).Str("kind", a.ks.reg.name).Str("id", a.act.id).Msg("spots: a moved Spot's timers did not decode; they are dropped")
		return
	}
	now := time.Now()
	for _, mt := range ts {
		if a.act.timers == nil {
			a.act.timers = map[string]*timerData{}
		}
		f := a.rt.clock.set(a.act, mt.Name, now.Add(mt.left), mt.Period)
		if old := a.act.timers[mt.Name]; old != nil {
			old.fire.stale = true
		}
		a.act.timers[mt.Name] = newTimerData(a.ks.reg, mt.Timer, f)
	}
}

// movedTimer is a timer on its way to a new owner.
type movedTimer struct {
	Timer
	left time.Duration // before its next firing
}

// encodeTimers encodes the Spot's timers with the time each has left:
// count, then per timer name, left (ns), due (ns), period (ns), packet,
// payload.
func (a *spotActor) encodeTimers() []byte {
	if len(a.act.timers) == 0 {
		return nil
	}
	now := time.Now()
	b := binary.AppendUvarint(nil, uint64(len(a.act.timers)))
	for _, td := range a.act.timers {
		left, _ := a.rt.clock.left(a.act, td.Name, now)
		b = appendString(b, td.Name)
		b = binary.AppendUvarint(b, uint64(left))
		b = binary.AppendUvarint(b, uint64(td.Due))
		b = binary.AppendUvarint(b, uint64(td.Period))
		b = appendString(b, td.Packet)
		b = binary.AppendUvarint(b, uint64(len(td.Payload)))
		b = append(b, td.Payload...)
	}
	return b
}

// decodeTimers reads what encodeTimers wrote, within the timer limits.
func decodeTimers(b []byte) ([]movedTimer, error) {
	r := reader{b: b}
	n := r.uvarint()
	if r.err != nil || n > MaxTimers {
		return nil, fmt.Errorf("%w: %d timers", errMalformed, n)
	}
	out := make([]movedTimer, 0, n)
	for range n {
		var mt movedTimer
		mt.Name = r.string(maxName)
		mt.left = time.Duration(min(r.uvarint(), uint64(maxTimerSpan)))
		mt.Due = time.Duration(min(r.uvarint(), uint64(maxTimerSpan)))
		mt.Period = time.Duration(min(r.uvarint(), uint64(maxTimerSpan)))
		mt.Packet = r.string(maxName)
		size := r.uvarint()
		if size > MaxTimerPayload || size > uint64(len(r.b)) {
			return nil, fmt.Errorf("%w: timer payload of %d bytes", errMalformed, size)
		}
		mt.Payload = append([]byte(nil), r.b[:size]...)
		r.b = r.b[size:]
		if r.err != nil || mt.Name == "" {
			return nil, fmt.Errorf("%w: timer", errMalformed)
		}
		out = append(out, mt)
	}
	return out, r.err
}

// maxTimerSpan bounds a decoded duration (a year).
const maxTimerSpan = 365 * 24 * time.Hour
