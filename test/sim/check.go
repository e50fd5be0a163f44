package sim

import (
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// The kinds of record writes a Spot's history holds.
const (
	kindClaim    = 'c'
	kindTransfer = 't'
	kindRelease  = 'r'
	kindTouch    = 'k' // a write of the same record, to have it confirmed (ackedMine)
)

// Scenario hooks: what w.on is told.
const (
	hookWrite    = "write"
	hookActivate = "activate"
)

// applied is one record write as the master applied it, in true time.
// A failover that later loses it marks it lost; the history keeps it (an
// activation claimed by it may still be running).
type applied struct {
	at   time.Duration
	kind byte
	rec  fence.Record
	lost bool
}

type spotEpoch struct {
	spot  int
	epoch uint64
}

// incident is one overlap: activation a ran a turn after the write at
// start superseded its own record.
type incident struct {
	a     *activation
	start time.Duration
	loss  time.Duration // the last lost-write event at or before start
}

// bound is the longest overlap the guarantee allows after a lost write:
// TTL + margin, plus what drift within ρ adds to both.
func (w *world) bound() time.Duration {
	f := w.p.fence
	return f.TTL + f.Margin + time.Duration(float64(f.TTL+f.Margin)*2*f.Rho)
}

// applied records a record write at the master and checks that the
// epochs of owner records strictly increase while no write is lost.
func (w *world) applied(spot int, kind byte, rec fence.Record) int {
	h := w.hist[spot]
	if w.on != nil {
		defer w.on(hookWrite, spot, rec)
	}
	if (kind == kindClaim || kind == kindTransfer) && w.lossAt < 0 {
		for i := len(h) - 1; i >= 0; i-- {
			if !h[i].lost && (h[i].kind == kindClaim || h[i].kind == kindTransfer) {
				if rec.Epoch <= h[i].rec.Epoch {
					w.problem("spot %d: epoch %d written after epoch %d with no write lost", spot, rec.Epoch, h[i].rec.Epoch)
				}
				break
			}
		}
	}
	w.hist[spot] = append(h, applied{at: w.now, kind: kind, rec: rec})
	return len(h)
}

// activated counts activations per (Spot, epoch): while no write is lost,
// one lifecycle only.
func (w *world) activated(a *activation) {
	w.st.activations++
	w.actsOf[a.spot] = append(w.actsOf[a.spot], a)
	w.tracef("%s ACTIVATES spot%d %v", a.n.rid, a.spot, a.rec)
	if w.on != nil {
		defer w.on(hookActivate, a.spot, a.rec)
	}
	k := spotEpoch{a.spot, a.rec.Epoch}
	hs := w.actsBy[k]
	if hs == nil {
		hs = map[fence.Holder]bool{}
		w.actsBy[k] = hs
	}
	if hs[a.rec.Holder] {
		return
	}
	if len(hs) > 0 {
		if w.lossAt < 0 {
			w.problem("spot %d epoch %d activated by %v after another lifecycle, with no write lost", a.spot, a.rec.Epoch, a.rec.Holder)
		}
		w.st.dupActivations++
	}
	hs[a.rec.Holder] = true
}

// turn records a's turn for r at true time now and checks the guarantee:
// no activation acts after its authority ended — a later write changed
// its record, or another activation was established on a later view of
// the record — unless a write was lost before that, and then for at most
// bound().
func (w *world) turn(a *activation, r *request) {
	w.st.turns++
	a.turns++
	r.act = a
	if r.turns++; r.turns > 1 {
		w.problem("req%d ran %d turns", r.id, r.turns)
	}
	w.tracef("%s TURN spot%d %v for req%d", a.n.rid, a.spot, a.rec, r.id)
	end, by := w.authorityEnd(a)
	if end > w.now {
		return
	}
	d := w.now - end
	loss := time.Duration(-1)
	for _, t := range w.lossEvents {
		if t <= end {
			loss = t
		}
	}
	if loss < 0 {
		w.problem("spot %d: %v ran a turn %v after %s, with no write lost", a.spot, a.rec, d, by)
		return
	}
	w.st.overlapTurns++
	w.st.maxOverlap = max(w.st.maxOverlap, d)
	orphan := w.ownWriteLost(a)
	if !a.counted[end] {
		a.counted[end] = true
		w.st.overlaps++
		if orphan {
			w.st.orphans++
		}
		w.incidents = append(w.incidents, incident{a: a, start: end, loss: loss})
		w.tracef("OVERLAP spot%d: %v acts after %s (own claim lost: %v)", a.spot, a.rec, by, orphan)
	}
	if lim := w.bound(); d > lim && (w.p.confirm || !orphan) {
		w.problem("spot %d: %v overlaps (since %s) for %v after a lost write, over the bound %v", a.spot, a.rec, by, d, lim)
	}
}

// authorityEnd is when a stopped being the one activation allowed to act:
// the first record write applied after a's view of the record, or the
// first other activation established on a later view, whichever is first
// (never: a large time).
func (w *world) authorityEnd(a *activation) (time.Duration, string) {
	end, by := time.Duration(1<<62), ""
	for _, h := range w.hist[a.spot] {
		if h.at > a.obs && h.kind != kindTouch && (h.rec != a.rec || h.kind == kindRelease) {
			end, by = h.at, fmt.Sprintf("the record became %v (%c)", h.rec, h.kind)
			break
		}
	}
	for _, b := range w.actsOf[a.spot] {
		if b.obs > a.obs && b.obs < end && b.rec != a.rec {
			end, by = b.obs, fmt.Sprintf("%s activated %v", b.n.rid, b.rec)
		}
	}
	return end, by
}

// ownWriteLost: the write that established a's record was lost (an
// activation only its own checks can stop).
func (w *world) ownWriteLost(a *activation) bool {
	h := w.hist[a.spot]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].at <= a.obs && h[i].kind != kindRelease && h[i].rec == a.rec {
			return h[i].lost
		}
	}
	return false
}

// finalChecks: every request ended exactly once, and every overlap was
// logged by the node that overlapped (unless it crashed first).
func (w *world) finalChecks() {
	for _, r := range w.reqs {
		switch {
		case !r.ended:
			w.problem("req%d never ended for its caller", r.id)
		case r.answers+r.drops != 1:
			w.problem("req%d: %d answers and %d drops at the server, want exactly one", r.id, r.answers, r.drops)
		case r.turns > 0 && r.answers == 0 && r.drops == 0:
			w.problem("req%d ran a turn but was never answered", r.id)
		}
	}
	for _, in := range w.incidents {
		n := in.a.n
		logged := false
		for _, t := range n.logs {
			logged = logged || t >= in.loss
		}
		if !logged && n.proc == in.a.proc {
			w.problem("spot %d: the overlap of %v from %v was never logged by %s", in.a.spot, in.a.rec, in.start, n.rid)
		}
	}
}
