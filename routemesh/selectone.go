package routemesh

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/wire"
)

// Call sends a request on channel to one ready Server chosen by weight
// (select-one) and waits for its one terminal result. Selection and submit
// are one operation: the chosen RID is never returned before the call ends.
// Readiness, capacity and drain are applied first; no positive-weight
// candidate → ErrNoTarget; all positive-weight candidates full → ErrBusy.
func (n *Node) Call(ctx context.Context, channel, packet string, payload []byte) ([]byte, error) {
	out, _, err := n.CallFrom(ctx, channel, packet, payload)
	return out, err
}

// CallFrom is Call that also reports which RID served the reply (after the
// call ended), for monitoring and tools.
func (n *Node) CallFrom(ctx context.Context, channel, packet string, payload []byte) ([]byte, string, error) {
	n.cnt.calls.Add(1)
	start := time.Now()
	l, err := n.selectOne(channel)
	if err != nil {
		n.cnt.result(err)
		return nil, "", err
	}
	out, err := n.call(ctx, l, wire.Envelope{Kind: wire.KindRequest, Channel: channel, Packet: packet, Payload: payload})
	n.lat.observe(time.Since(start))
	n.cnt.result(err)
	return out, l.rid, err
}

// Send sends a one-way message on channel to one Server chosen by
// weight. It ends when the message is queued for that Server (or refused).
func (n *Node) Send(ctx context.Context, channel, packet string, payload []byte) error {
	n.cnt.calls.Add(1)
	l, err := n.selectOne(channel)
	if err == nil {
		err = n.submitOneWay(ctx, l, wire.Envelope{Kind: wire.KindSend, Channel: channel, Packet: packet, Payload: payload})
	}
	n.cnt.result(err)
	return err
}

func (n *Node) selectOne(channel string) (*link, error) {
	v := n.load()
	co, err := n.channelFor(v, channel)
	if err != nil {
		return nil, err
	}
	var cbuf [8]selection.Candidate
	sc := n.selectInput(co, v)
	cands, ls := sc.candidates(v, cbuf[:0]), sc.links
	var idx int
	var outcome selection.Outcome
	if len(cands) == 1 && eligibleOne(&cands[0]) {
		// One eligible member (the filter of selection.Pick): no draw.
		idx, outcome = 0, selection.Picked
	} else {
		n.rngMu.Lock()
		idx, outcome = selection.Pick(cands, n.rng)
		n.rngMu.Unlock()
	}
	// The decision report is for monitoring: built for the first call on
	// each new input (view or target table), for one in
	// selectionReportEvery when the last report is older than
	// selectionReportAge, and always when the call cannot be placed — not
	// on every call of the hot path.
	if n := co.picks.Add(1); outcome != selection.Picked || n%selectionReportEvery == 1 || co.reported.Load() != sc {
		now := time.Now()
		if last := co.last.Load(); outcome != selection.Picked || last == nil || co.reported.Load() != sc || now.Sub(last.At) >= selectionReportAge {
			co.last.Store(newSelection(now, cands, idx, outcome))
			co.reported.Store(sc)
		}
	}
	switch outcome {
	case selection.Picked:
		return ls[idx], nil
	case selection.Busy:
		return nil, fmt.Errorf("%w: every Server of %s is at capacity", zerr.ErrBusy, channel)
	default:
		return nil, fmt.Errorf("%w: no ready Server with weight > 0 on %s", zerr.ErrNoTarget, channel)
	}
}

// eligibleOne is selection.Pick's filter for one candidate.
func eligibleOne(c *selection.Candidate) bool {
	return c.Ready && !c.Draining && !c.Full && c.Weight > 0
}

// selCache is one channel's select-one input for one view and one target
// table snapshot: the members with what cannot change until either is
// replaced, so a call rebuilds nothing and looks nothing up by name. What
// can change meanwhile (drain, capacity) is read per call from the flags
// it points at.
type selCache struct {
	v     *view
	snap  *selection.View
	cands []selection.Candidate // RID, Weight, Local, Ready
	links []*link               // nil: not ready
	full  []*atomic.Bool        // the member's capacity flag for the channel; nil = none
	owner *actors.Ref           // the local owner, for a local member; nil = restarting
}

// selectInput returns the channel's cached select-one input for v,
// building it when v or the target table changed since.
func (n *Node) selectInput(co *channelOwner, v *view) *selCache {
	snap := n.table.Snapshot()
	if c := co.sel.Load(); c != nil && c.v == v && c.snap == snap {
		return c
	}
	targets := snap.ServersShared(co.name)
	c := &selCache{v: v, snap: snap, owner: v.owners[co.name],
		cands: make([]selection.Candidate, len(targets)), links: make([]*link, len(targets)), full: make([]*atomic.Bool, len(targets))}
	for i, t := range targets {
		c.cands[i] = selection.Candidate{RID: t.RID, Weight: t.Weight, Local: t.Local}
		if t.Local {
			c.cands[i].Ready, c.links[i] = true, n.self
		} else if l := v.links[t.RID]; l != nil {
			c.cands[i].Ready, c.links[i], c.full[i] = true, l, l.full[co.name]
		}
	}
	co.sel.Store(c)
	return c
}

// candidates appends the members as they are now to buf (see
// Node.candidates, which builds the same from scratch).
func (c *selCache) candidates(v *view, buf []selection.Candidate) []selection.Candidate {
	for i, cd := range c.cands {
		switch {
		case cd.Local:
			cd.Draining = v.state == NodeDraining
			cd.Full = c.owner == nil || v.paused || quotaHeadroom(c.owner) == 0
		case c.links[i] != nil:
			cd.Draining = c.links[i].draining.Load()
			cd.Full = c.full[i] != nil && c.full[i].Load()
		}
		buf = append(buf, cd)
	}
	return buf
}

// selectionReportEvery is how many successful selections share one decision
// report (a power of two keeps the check cheap).
const selectionReportEvery = 16

// selectionReportAge is how long a successful selection's report stands
// before another successful one replaces it.
const selectionReportAge = 100 * time.Millisecond

func newSelection(at time.Time, cands []selection.Candidate, idx int, outcome selection.Outcome) *Selection {
	considered := selection.Consider(cands)
	s := &Selection{At: at, Outcome: outcome.String(), Candidates: make([]Candidate, len(considered))}
	if idx >= 0 {
		s.RID = cands[idx].RID
	}
	for i, c := range considered {
		s.Candidates[i] = Candidate{RID: c.RID, Weight: c.Weight, Local: cands[i].Local} // Consider keeps the order
		if c.Skip != 0 {
			s.Candidates[i].Skip = c.Skip.String()
		}
	}
	return s
}

// newRand returns a seeded generator for weighted selection.
func newRand(seed uint64) *rand.Rand {
	if seed == 0 {
		seed = ident.Generation()
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
