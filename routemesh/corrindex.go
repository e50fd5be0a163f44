package routemesh

// corrIndex finds a call table shard's entries by correlation id. Ids are
// handed out in sequence, so the calls in flight at once fall into distinct
// slots of an array indexed by the id (its bits above the shard's); the
// rare id whose slot an older call still holds goes to a map. Cheaper than
// a map for every call. Guarded by the shard's mutex; an entry's corr is
// set before it is put.
type corrIndex struct {
	slots []*pending // a power of two long; nil until the first put
	over  map[uint64]*pending
	n     int // entries, in slots and over
}

// corrShift drops the id bits that chose the shard (16 shards).
const corrShift = 4

const (
	minCorrSlots  = 64
	keptCorrSlots = 4096 // an index larger than this shrinks when mostly empty
)

func (x *corrIndex) slot(corr uint64) **pending {
	return &x.slots[(corr>>corrShift)&uint64(len(x.slots)-1)]
}

func (x *corrIndex) len() int { return x.n }

// put adds p under p.corr (not present).
func (x *corrIndex) put(p *pending) {
	if x.n >= len(x.slots)/2 {
		x.resize(max(minCorrSlots, 2*len(x.slots)))
	}
	x.place(p)
	x.n++
}

func (x *corrIndex) place(p *pending) {
	if s := x.slot(p.corr); *s == nil {
		*s = p
		return
	}
	if x.over == nil {
		x.over = map[uint64]*pending{}
	}
	x.over[p.corr] = p
}

// take removes and returns corr's entry, or nil.
func (x *corrIndex) take(corr uint64) *pending {
	if len(x.slots) == 0 {
		return nil
	}
	var p *pending
	if s := x.slot(corr); *s != nil && (*s).corr == corr {
		p, *s = *s, nil
	} else if p = x.over[corr]; p != nil {
		delete(x.over, corr)
	} else {
		return nil
	}
	x.n--
	if len(x.slots) > keptCorrSlots && x.n < len(x.slots)/16 {
		x.resize(len(x.slots) / 4) // give a burst's memory back
	}
	return p
}

// resize moves every entry into slots of length n.
func (x *corrIndex) resize(n int) {
	old, over := x.slots, x.over
	x.slots, x.over = make([]*pending, n), nil
	for _, p := range old {
		if p != nil {
			x.place(p)
		}
	}
	for _, p := range over {
		x.place(p)
	}
}

// removeIf removes every entry for which drop reports true and appends it
// to out.
func (x *corrIndex) removeIf(drop func(*pending) bool, out []*pending) []*pending {
	for i, p := range x.slots {
		if p != nil && drop(p) {
			x.slots[i] = nil
			x.n--
			out = append(out, p)
		}
	}
	for corr, p := range x.over {
		if drop(p) {
			delete(x.over, corr)
			x.n--
			out = append(out, p)
		}
	}
	return out
}
