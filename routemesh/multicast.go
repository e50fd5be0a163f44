package routemesh

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/wire"
)

// Multicast sends a request on channel to every eligible remote Server
// member exactly once (ready, weight > 0, not draining — the local node is
// not a target), regardless of weight size, and returns each member's
// terminal result, sorted by RID. A member at capacity answers ErrBusy in
// its own result. No eligible member → ErrNoTarget.
func (n *Node) Multicast(ctx context.Context, channel, packet string, payload []byte) ([]MemberResult, error) {
	v := n.load()
	if _, err := n.channelFor(v, channel); err != nil {
		return nil, err
	}
	cands, ls := n.candidates(v, channel, make([]selection.Candidate, 0, 8), nil)
	targets, _ := selection.Multicast(cands)
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no eligible remote Server on %s", zerr.ErrNoTarget, channel)
	}
	out := make([]MemberResult, len(targets))
	var wg sync.WaitGroup
	for i, idx := range targets {
		l := ls[idx]
		out[i].RID = l.rid
		n.cnt.calls.Add(1)
		wg.Add(1)
		go func(r *MemberResult) {
			defer wg.Done()
			r.Reply, r.Err = n.call(ctx, l, wire.Envelope{Kind: wire.KindRequest, Channel: channel, Packet: packet, Payload: payload})
			n.cnt.result(r.Err)
		}(&out[i])
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].RID < out[j].RID })
	return out, nil
}
