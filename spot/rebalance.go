package spot

import (
	"context"
	"slices"
	"time"

	"github.com/zlink-go/zlink/actors"
)

// rebalanceActor (opt-in, Config.Rebalance): after the membership of
// Object Servers changes, it moves this node's Spots of persistent kinds
// toward the node placement now picks for them — at most Config.Rebalance
// per second, idle ones first, one move per Spot at a time (a move refuses
// a Spot that is already moving).
type rebalanceActor struct {
	rt       *runtime
	seen     *[]member // the membership the last full pass was made for
	leftover bool      // the last pass found more than its budget
	budget   float64
	last     time.Time
	running  int // moves in flight
}

type rebalanced struct{}

func (a *rebalanceActor) Receive(c *actors.Context) {
	rt := a.rt
	switch msg := c.Message().(type) {
	case *actors.Started:
		a.last = time.Now()
	case *rebalanced:
		a.running--
	case *tick:
		rate := rt.cfg.Rebalance
		a.budget = min(a.budget+rate*msg.at.Sub(a.last).Seconds(), max(rate, 1))
		a.last = msg.at
		ms := rt.members.Load()
		if ms == a.seen && !a.leftover {
			return
		}
		if _, draining := rt.n.PeerReady(rt.n.RID()); draining || rt.stopping.Load() || a.budget < 1 {
			return
		}
		a.seen = ms
		a.pass(c)
	}
}

// pass moves up to the budget of Spots whose placement owner is another
// ready node, idle ones first.
func (a *rebalanceActor) pass(c *actors.Context) {
	rt := a.rt
	type cand struct {
		ks   *kindState
		id   string
		to   string
		used int64
	}
	var cands []cand
	self := rt.n.RID()
	for _, ks := range rt.order {
		if ks.reg.persist == nil {
			continue
		}
		ks.dir.each(func(act *activation) {
			if act.closing.Load() {
				return
			}
			if to, ok := rt.place(ks.reg.name, act.id); ok && to != self {
				cands = append(cands, cand{ks: ks, id: act.id, to: to, used: act.lastUsed.Load()})
			}
		})
	}
	slices.SortFunc(cands, func(x, y cand) int { return int(x.used - y.used) })
	n := min(len(cands), int(a.budget), drainMoves-a.running)
	a.leftover = len(cands) > n
	self2 := c.Self()
	for _, cd := range cands[:max(n, 0)] {
		a.budget--
		a.running++
		if !rt.goStore(func() {
			ctx, cancel := context.WithTimeout(rt.base, rt.moveWait())
			defer cancel()
			if err := rt.move(ctx, cd.ks, cd.id, cd.to); err == nil {
				rt.stats.rebalanced.Add(1)
			}
			_ = self2.Tell(&rebalanced{})
		}) {
			a.running--
		}
	}
}
