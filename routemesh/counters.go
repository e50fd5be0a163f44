package routemesh

import (
	"errors"
	"sync/atomic"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// counters are a node's call counters: a leaf structure of atomics.
type counters struct {
	calls, ok        atomic.Uint64
	byResult         [zerr.Slots]atomic.Uint64 // by slot of the results' table (zerr.SlotOf)
	protocolErrors   atomic.Uint64             // malformed frames, unknown packets on the wire
	lateFrames       atomic.Uint64             // frames from pipes that are not current
	handshakeRejects atomic.Uint64
	// connectionsRefused: inbound connections the listener's guards
	// refused before the handshake (caps, deadlines, malformed ZMTP, TLS).
	connectionsRefused atomic.Uint64
	peersLost          atomic.Uint64 // ready peers lost without a goodbye (liveness, socket closed, restart)
	peersDeparted      atomic.Uint64 // ready peers that said goodbye before leaving (clean departures)
	discoveryRounds    atomic.Uint64 // discovery re-lists that succeeded
	discoveryErrors    atomic.Uint64 // discovery re-lists that failed (store unreachable)
	descriptorPuts     atomic.Uint64 // descriptor writes that succeeded
	descriptorErrors   atomic.Uint64 // descriptor writes or renewals that failed
}

// resultSlot is err's slot in the results' table; a call that timed out
// counts as a timeout whatever else its error wraps, and a peer's error
// counts by its code ("other" for a code this build has no row for).
func resultSlot(err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, zerr.ErrTimeout) {
		return zerr.SlotOf(zerr.ErrTimeout)
	}
	if re, ok := errors.AsType[*wire.RemoteError](err); ok && re.Code != 0 {
		return zerr.SlotOfCode(uint16(re.Code))
	}
	return zerr.SlotOf(err)
}

func (c *counters) result(err error) {
	if err == nil {
		c.ok.Add(1)
		return
	}
	c.byResult[resultSlot(err)].Add(1)
}

func (c *counters) snapshot() map[string]uint64 {
	m := map[string]uint64{
		"calls":               c.calls.Load(),
		"ok":                  c.ok.Load(),
		"protocol_errors":     c.protocolErrors.Load(),
		"late_frames":         c.lateFrames.Load(),
		"handshake_rejects":   c.handshakeRejects.Load(),
		"connections_refused": c.connectionsRefused.Load(),
		"peers_lost":          c.peersLost.Load(),
		"peers_departed":      c.peersDeparted.Load(),
		"discovery_rounds":    c.discoveryRounds.Load(),
		"discovery_errors":    c.discoveryErrors.Load(),
		"descriptor_puts":     c.descriptorPuts.Load(),
		"descriptor_errors":   c.descriptorErrors.Load(),
	}
	for i := 1; i < len(c.byResult); i++ {
		if v := c.byResult[i].Load(); v > 0 {
			m["errors_"+zerr.SlotName(i)] = v
		}
	}
	return m
}
