package memnet

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"
)

// Verdict is what happens to one frame.
type Verdict uint8

const (
	// Deliver passes the frame on (subject to the direction's delay).
	Deliver Verdict = 1 + iota
	// Drop loses the frame silently.
	Drop
	// Hold keeps the frame back until the next frame in the same direction
	// has been delivered, or until Faults.HoldMax passes: a reorder.
	Hold
)

// Packet is one frame on its way, as a filter sees it.
type Packet struct {
	From, To string // host names
	Seq      uint64 // frames sent so far in this direction, from 1
	Frame    []byte // raw frame; the filter must not keep or modify it
}

// Faults are the random and fixed faults of one direction. The zero value
// delivers everything at once.
type Faults struct {
	// Cut drops every frame in this direction (and refuses new dials
	// between the two hosts).
	Cut bool
	// Drop is the probability (0..1) that a frame is lost.
	Drop float64
	// Reorder is the probability (0..1) that a frame is held back behind
	// the next one.
	Reorder float64
	// Delay is added to every frame, plus a seeded random part up to
	// Jitter (so delayed frames may also overtake each other).
	Delay, Jitter time.Duration
	// HoldMax bounds how long a held frame waits for a successor before it
	// is delivered anyway. Default 50 ms.
	HoldMax time.Duration
}

// Counts are what the network did with the frames sent so far.
type Counts struct {
	Sent, Delivered, Dropped, Held, Delayed uint64
}

type dir struct{ from, to string }

// held is a frame kept back for a reorder.
type held struct {
	in    *inbox
	it    item
	timer *time.Timer
}

// Network is a set of hosts and their links. Lock order: Network.mu, then a
// listener's mu, then an inbox's mu.
type Network struct {
	mu        sync.Mutex
	seed      uint64
	rngs      map[dir]*rand.Rand // one stream per direction
	nextPort  int
	listeners map[string]*listener // by "host:port"
	faults    map[dir]Faults
	seq       map[dir]uint64
	held      map[dir]*held
	filter    func(Packet) Verdict
	counts    Counts
}

// New returns an empty network whose random faults draw from seed.
func New(seed uint64) *Network {
	return &Network{
		seed:      seed,
		rngs:      map[dir]*rand.Rand{},
		nextPort:  20000,
		listeners: map[string]*listener{},
		faults:    map[dir]Faults{},
		seq:       map[dir]uint64{},
		held:      map[dir]*held{},
	}
}

// Host returns the transport of the host called name (the name faults
// refer to). Hosts need not be declared; two calls with one name are the
// same host.
func (n *Network) Host(name string) *Host { return &Host{net: n, name: name} }

// SetFaults sets the faults of the direction from → to.
func (n *Network) SetFaults(from, to string, f Faults) {
	n.mu.Lock()
	n.faults[dir{from, to}] = f
	n.mu.Unlock()
}

// Cut drops every frame from → to; the other direction is unchanged.
func (n *Network) Cut(from, to string) {
	n.mu.Lock()
	f := n.faults[dir{from, to}]
	f.Cut = true
	n.faults[dir{from, to}] = f
	n.mu.Unlock()
}

// Partition cuts both directions between a and b.
func (n *Network) Partition(a, b string) {
	n.Cut(a, b)
	n.Cut(b, a)
}

// Heal clears every fault in both directions between a and b.
func (n *Network) Heal(a, b string) {
	n.mu.Lock()
	delete(n.faults, dir{a, b})
	delete(n.faults, dir{b, a})
	n.mu.Unlock()
}

// SetFilter installs f (nil removes it). f sees every frame before the
// direction's faults and runs under the network's lock: it must be fast
// and must not call the network. Drop or Hold from f wins over the faults.
func (n *Network) SetFilter(f func(Packet) Verdict) {
	n.mu.Lock()
	n.filter = f
	n.mu.Unlock()
}

// Counts returns what the network did so far.
func (n *Network) Counts() Counts {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts
}

// Conns counts the live connections between hosts a and b (dialed either
// way).
func (n *Network) Conns(a, b string) int {
	n.mu.Lock()
	ls := make([]*listener, 0, len(n.listeners))
	for _, l := range n.listeners {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	total := 0
	for _, l := range ls {
		switch l.host {
		case a:
			total += len(l.connsFrom(b))
		case b:
			if a != b {
				total += len(l.connsFrom(a))
			}
		}
	}
	return total
}

// Break closes every connection between hosts a and b, as a reset would:
// the dialer's Recv returns io.EOF and the listener reports OnClosed.
func (n *Network) Break(a, b string) {
	n.mu.Lock()
	var ls []*listener
	for _, l := range n.listeners {
		if l.host == a || l.host == b {
			ls = append(ls, l)
		}
	}
	n.mu.Unlock()
	for _, l := range ls {
		peer := b
		if l.host == b {
			peer = a
		}
		for _, c := range l.connsFrom(peer) {
			c.sever(errReset)
		}
	}
}

// rng is the random stream of direction d: seeded by the network's seed
// and the two host names, so the decisions in one direction depend only on
// the frames sent in that direction, not on how other directions' sends
// interleave with them.
func (n *Network) rng(d dir) *rand.Rand {
	r := n.rngs[d]
	if r == nil {
		h := fnv.New64a()
		_, _ = h.Write([]byte(d.from))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(d.to))
		r = rand.New(rand.NewPCG(n.seed, h.Sum64()))
		n.rngs[d] = r
	}
	return r
}

func (n *Network) cut(a, b string) bool {
	return n.faults[dir{a, b}].Cut || n.faults[dir{b, a}].Cut
}

// route decides the fate of one frame and delivers it to in.
func (n *Network) route(from, to string, in *inbox, it item) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := dir{from, to}
	n.seq[d]++
	n.counts.Sent++
	f := n.faults[d]
	v := Deliver
	if n.filter != nil {
		v = n.filter(Packet{From: from, To: to, Seq: n.seq[d], Frame: it.frame})
	}
	if v == Deliver {
		switch {
		case f.Cut:
			v = Drop
		case f.Drop > 0 && n.rng(d).Float64() < f.Drop:
			v = Drop
		case f.Reorder > 0 && n.rng(d).Float64() < f.Reorder:
			v = Hold
		}
	}
	switch v {
	case Drop:
		n.counts.Dropped++
		return
	case Hold:
		if n.held[d] == nil {
			n.counts.Held++
			h := &held{in: in, it: it}
			wait := f.HoldMax
			if wait <= 0 {
				wait = 50 * time.Millisecond
			}
			h.timer = time.AfterFunc(wait, func() { n.release(d, h) })
			n.held[d] = h
			return
		}
		// One frame is held already: this one goes ahead of it.
	}
	delay := f.Delay
	if f.Jitter > 0 {
		delay += time.Duration(n.rng(d).Int64N(int64(f.Jitter)))
	}
	n.deliver(in, it, delay)
	if h := n.held[d]; h != nil {
		delete(n.held, d)
		h.timer.Stop()
		n.deliver(h.in, h.it, delay)
	}
}

// release delivers a held frame whose successor never came.
func (n *Network) release(d dir, h *held) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.held[d] == h {
		delete(n.held, d)
		n.deliver(h.in, h.it, 0)
	}
}

// deliver pushes it into in now, or after delay. Called with n.mu held.
func (n *Network) deliver(in *inbox, it item, delay time.Duration) {
	n.counts.Delivered++
	if delay <= 0 {
		in.push(it)
		return
	}
	n.counts.Delayed++
	time.AfterFunc(delay, func() { in.push(it) })
}
