package timers

import (
	"container/heap"
	"time"
)

// Key names one timer of one activation.
type Key struct {
	Act  uint64 // the activation's node-unique sequence
	Name string
}

// Firing is one timer due now.
type Firing struct {
	Key Key
	Gen uint64 // the timer's generation: the driver hands it back in Taken
	// Merged counts the due times this firing stands for beyond its own
	// (periods missed while the last firing was not taken, or during a
	// stall of the clock).
	Merged int
}

type entry struct {
	key     Key
	gen     uint64
	due     time.Time
	period  time.Duration // 0: one-shot
	pending bool          // fired, not taken yet
	merged  int           // due times passed while pending
	idx     int           // in the heap; -1 while pending
}

// Machine is the schedule of one node's Spot timers.
type Machine struct {
	h     entryHeap
	byKey map[Key]*entry
	byAct map[uint64]map[string]*entry
	gen   uint64
}

// New returns an empty schedule.
func New() *Machine {
	return &Machine{byKey: map[Key]*entry{}, byAct: map[uint64]map[string]*entry{}}
}

// Set schedules timer k to fire at due, and every period after it when
// period > 0 (a negative period is taken as 0). It replaces a timer of the
// same key and returns the new timer's generation.
func (m *Machine) Set(k Key, due time.Time, period time.Duration) uint64 {
	m.Cancel(k)
	m.gen++
	e := &entry{key: k, gen: m.gen, due: due, period: max(period, 0)}
	m.byKey[k] = e
	if m.byAct[k.Act] == nil {
		m.byAct[k.Act] = map[string]*entry{}
	}
	m.byAct[k.Act][k.Name] = e
	heap.Push(&m.h, e)
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
		heap.Remove(&m.h, e.idx)
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
	return e.due, e.period, e.gen, true
}

// Len is the number of timers scheduled.
func (m *Machine) Len() int { return len(m.byKey) }

// Tick returns the timers due at now, and when to tick next (zero when
// nothing can fire until a timer is taken or set).
func (m *Machine) Tick(now time.Time) ([]Firing, time.Time) {
	var out []Firing
	for len(m.h) > 0 && !m.h[0].due.After(now) {
		e := heap.Pop(&m.h).(*entry)
		e.idx = -1
		f := Firing{Key: e.key, Gen: e.gen}
		if e.period > 0 {
			// Fixed rate: the next due time on the grid after now; the
			// ones skipped are merged into this firing.
			k := int(now.Sub(e.due)/e.period) + 1
			e.due = e.due.Add(time.Duration(k) * e.period)
			f.Merged = k - 1
		}
		e.pending = true
		out = append(out, f)
	}
	return out, m.next()
}

func (m *Machine) next() time.Time {
	if len(m.h) == 0 {
		return time.Time{}
	}
	return m.h[0].due
}

// Taken reports that firing gen of timer k was taken (its turn is queued):
// a repeating timer is scheduled again at its next due time, a one-shot
// timer is forgotten. It returns the due times merged while the firing was
// pending, and false when the timer changed meanwhile (cancelled, or set
// again: the firing is stale and must not run).
func (m *Machine) Taken(k Key, gen uint64, now time.Time) (merged int, ok bool) {
	e := m.byKey[k]
	if e == nil || e.gen != gen || !e.pending {
		return 0, false
	}
	e.pending = false
	if e.period == 0 {
		m.remove(e)
		return 0, true
	}
	if !e.due.After(now) {
		// Due times passed while the firing waited: merged into it.
		k := int(now.Sub(e.due)/e.period) + 1
		e.due = e.due.Add(time.Duration(k) * e.period)
		e.merged += k
	}
	merged, e.merged = e.merged, 0
	heap.Push(&m.h, e)
	return merged, true
}

// Retry schedules firing gen of timer k again at at (the driver could not
// deliver it); a repeating timer keeps its grid and fires at its next due
// time instead. It reports false when the timer changed meanwhile.
func (m *Machine) Retry(k Key, gen uint64, at time.Time) bool {
	e := m.byKey[k]
	if e == nil || e.gen != gen || !e.pending {
		return false
	}
	e.pending = false
	if e.period == 0 {
		e.due = at
	} else {
		e.merged++
	}
	heap.Push(&m.h, e)
	return true
}

type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.idx = -1
	return e
}
