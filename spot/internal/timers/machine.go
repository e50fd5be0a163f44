package timers

import "time"

// Key names one timer of one activation.
type Key struct {
	Act  uint64 // the activation's node-unique sequence
	Name string
}

// Firing is one timer due now.
type Firing struct {
	Key Key
	Gen uint64 // the timer's generation: the driver hands it back in Taken
	// Tag is what the driver gave Set for this timer (its firing's
	// message, say), returned as it was.
	Tag any
	// Merged counts the due times this firing stands for beyond its own
	// (periods missed during a stall of the clock).
	Merged int
}

type entry struct {
	key     Key
	gen     uint64
	tag     any
	due     int64 // ns after the machine's epoch
	period  int64 // ns; 0: one-shot
	pending bool  // a one-shot fired, not taken yet
	idx     int   // in the heap; -1 while pending
}

// Machine is the schedule of one node's Spot timers.
type Machine struct {
	h     entryHeap
	byKey map[Key]*entry
	byAct map[uint64]map[string]*entry
	gen   uint64
	epoch time.Time // due times are kept as ns after it (cheap to compare)
	set   bool      // epoch is set (by the first Set)
}

// New returns an empty schedule.
func New() *Machine {
	return &Machine{byKey: map[Key]*entry{}, byAct: map[uint64]map[string]*entry{}}
}

func (m *Machine) ns(t time.Time) int64 {
	if !m.set {
		m.epoch, m.set = t, true
	}
	return int64(t.Sub(m.epoch))
}

func (m *Machine) time(ns int64) time.Time { return m.epoch.Add(time.Duration(ns)) }

// Set schedules timer k to fire at due, and every period after it when
// period > 0 (a negative period is taken as 0), with tag returned in its
// firings. It replaces a timer of the same key and returns the new
// timer's generation.
func (m *Machine) Set(k Key, due time.Time, period time.Duration, tag any) uint64 {
	m.Cancel(k)
	m.gen++
	e := &entry{key: k, gen: m.gen, tag: tag, due: m.ns(due), period: int64(max(period, 0))}
	m.byKey[k] = e
	if m.byAct[k.Act] == nil {
		m.byAct[k.Act] = map[string]*entry{}
	}
	m.byAct[k.Act][k.Name] = e
	m.h.push(e)
	return e.gen
}

// Cancel forgets timer k; it reports whether there was one.
func (m *Machine) Cancel(k Key) bool {
	e := m.byKey[k]
	if e == nil {
		return false
	}
	m.remove(e)
	return true
}

// CancelAll forgets every timer of activation act and returns how many
// there were.
func (m *Machine) CancelAll(act uint64) int {
	es := m.byAct[act]
	n := len(es)
	for _, e := range es {
		m.remove(e)
	}
	return n
}

func (m *Machine) remove(e *entry) {
	if e.idx >= 0 {
		m.h.remove(e.idx)
	}
	delete(m.byKey, e.key)
	if es := m.byAct[e.key.Act]; es != nil {
		delete(es, e.key.Name)
		if len(es) == 0 {
			delete(m.byAct, e.key.Act)
		}
	}
}

// Due reports timer k's next due time, its period and its generation.
func (m *Machine) Due(k Key) (due time.Time, period time.Duration, gen uint64, ok bool) {
	e := m.byKey[k]
	if e == nil {
		return time.Time{}, 0, 0, false
	}
	return m.time(e.due), time.Duration(e.period), e.gen, true
}

// Len is the number of timers scheduled.
func (m *Machine) Len() int { return len(m.byKey) }

// Tick appends the timers due at now to out and returns it, with when to
// tick next (zero when nothing can fire until a timer is taken or set). A
// repeating timer is scheduled again at once, at its next due time on its
// grid after now; a one-shot timer waits to be taken (or retried).
func (m *Machine) Tick(now time.Time, out []Firing) ([]Firing, time.Time) {
	t := m.ns(now)
	for len(m.h) > 0 && m.h[0].due <= t {
		e := m.h[0].e
		f := Firing{Key: e.key, Gen: e.gen, Tag: e.tag}
		if e.period > 0 {
			// Fixed rate: the next due time on the grid after now; the
			// ones skipped are merged into this firing.
			k := (t-e.due)/e.period + 1
			e.due += k * e.period
			f.Merged = int(k - 1)
			m.h[0].due = e.due
			m.h.down(0)
		} else {
			m.h.remove(0)
			e.pending = true
		}
		out = append(out, f)
	}
	return out, m.next()
}

func (m *Machine) next() time.Time {
	if len(m.h) == 0 {
		return time.Time{}
	}
	return m.time(m.h[0].due)
}

// Taken reports that firing gen of one-shot timer k was taken (its turn
// runs): the timer is forgotten. It returns false when the timer changed
// meanwhile (cancelled, or set again: the firing is stale and must not
// run), and for a repeating timer (scheduled again by Tick already).
func (m *Machine) Taken(k Key, gen uint64) bool {
	e := m.byKey[k]
	if e == nil || e.gen != gen || !e.pending {
		return false
	}
	m.remove(e)
	return true
}

// Retry schedules firing gen of one-shot timer k again at at (the driver
// could not deliver it). It reports false when the timer changed
// meanwhile, and for a repeating timer (it fires at its next due time).
func (m *Machine) Retry(k Key, gen uint64, at time.Time) bool {
	e := m.byKey[k]
	if e == nil || e.gen != gen || !e.pending {
		return false
	}
	e.pending = false
	e.due = m.ns(at)
	m.h.push(e)
	return true
}

// entryHeap is a binary min-heap of due times. Each slot holds its
// entry's due time beside the pointer, so sifting compares without
// following pointers (10,000 timers: 14 levels of them per firing).
type entryHeap []slot

type slot struct {
	due int64
	e   *entry
}

func (h *entryHeap) push(e *entry) {
	*h = append(*h, slot{due: e.due, e: e})
	e.idx = len(*h) - 1
	h.up(e.idx)
}

// remove takes out slot i.
func (h *entryHeap) remove(i int) {
	old := *h
	n := len(old) - 1
	old[i].e.idx = -1
	if i != n {
		old[i] = old[n]
		old[i].e.idx = i
	}
	old[n] = slot{}
	*h = old[:n]
	if i < n {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h entryHeap) up(i int) {
	s := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if h[p].due <= s.due {
			break
		}
		h[i] = h[p]
		h[i].e.idx = i
		i = p
	}
	h[i] = s
	s.e.idx = i
}

// down sifts slot i down; it reports whether it moved.
func (h entryHeap) down(i int) bool {
	s, start, n := h[i], i, len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].due < h[c].due {
			c = r
		}
		if s.due <= h[c].due {
			break
		}
		h[i] = h[c]
		h[i].e.idx = i
		i = c
	}
	h[i] = s
	s.e.idx = i
	return i > start
}
