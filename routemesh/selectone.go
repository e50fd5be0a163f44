package routemesh

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zlink-go/zlink/internal/ident"
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
	var lbuf [8]*link
	cands, ls := n.candidates(v, channel, cbuf[:0], lbuf[:0])
	n.rngMu.Lock()
	idx, outcome := selection.Pick(cands, n.rng)
	n.rngMu.Unlock()
	// The decision report is for monitoring: built for one call in
	// selectionReportEvery (and the first), and always when the call cannot
	// be placed — not on every call of the hot path.
	if n := co.picks.Add(1); outcome != selection.Picked || n%selectionReportEvery == 1 {
		co.last.Store(newSelection(time.Now(), cands, idx, outcome))
	}
	switch outcome {
	case selection.Picked:
		return ls[idx], nil
	case selection.Busy:
		return nil, fmt.Errorf("%w: every Server of %s is at capacity", wire.ErrBusy, channel)
	default:
		return nil, fmt.Errorf("%w: no ready Server with weight > 0 on %s", wire.ErrNoTarget, channel)
	}
}

// selectionReportEvery is how many successful selections share one decision
// report (a power of two keeps the check cheap).
const selectionReportEvery = 16

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
