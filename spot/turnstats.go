package spot

import (
	"errors"
	"sort"
	"sync/atomic"

	"github.com/zlink-go/zlink/wire"
)

// turnSources are the sources a turn is counted under (Context.Source).
var turnSources = [...]string{SourceRequest, SourceSend, SourceReply, SourceTimer}

// unknownPacket is the label of the turns for packets the kind has no
// handler for (only registered names become labels).
const unknownPacket = "_unknown"

// replyTurnPacket is the label of OnReply turns.
const replyTurnPacket = "_reply"

// turnSlots counts results by code: 0 is ok, then the wire codes, then the
// Spot codes (cycle, fenced, outcome unknown), the last "other".
const turnSlots = 24

// packetTurns counts one packet's turns by source and result (leaf
// atomics).
type packetTurns [len(turnSources)][turnSlots]atomic.Uint64

// turnStats counts a kind's turns per packet; the map is built before the
// kind starts and never written afterwards.
type turnStats struct {
	packets map[string]*packetTurns
	unknown packetTurns
}

func newTurnStats(reg *kindReg) *turnStats {
	ts := &turnStats{packets: map[string]*packetTurns{replyTurnPacket: {}}}
	for p := range reg.requests {
		ts.packets[p] = &packetTurns{}
	}
	for p := range reg.sends {
		if ts.packets[p] == nil {
			ts.packets[p] = &packetTurns{}
		}
	}
	return ts
}

func sourceIndex(source string) int {
	for i, s := range turnSources {
		if s == source {
			return i
		}
	}
	return 0
}

// count records one turn of packet from source ending with err.
func (ts *turnStats) count(packet, source string, err error) {
	pt := ts.packets[packet]
	if pt == nil {
		pt = &ts.unknown
	}
	pt[sourceIndex(source)][resultSlot(err)].Add(1)
}

func resultSlot(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrCycle):
		return int(turnSlots - 4)
	case errors.Is(err, ErrFenced):
		return int(turnSlots - 3)
	case errors.Is(err, ErrOutcomeUnknown):
		return int(turnSlots - 2)
	}
	if c := int(wire.CodeOf(err)); c > 0 && c < turnSlots-4 {
		return c
	}
	return turnSlots - 1
}

func slotName(i int) string {
	switch i {
	case 0:
		return "ok"
	case turnSlots - 4:
		return "cycle"
	case turnSlots - 3:
		return "fenced"
	case turnSlots - 2:
		return "outcome_unknown"
	case turnSlots - 1:
		return "other"
	}
	return wire.Code(i).String()
}

// TurnCount is a kind's turns of one packet from one source with one
// result: "ok" or the error kind.
type TurnCount struct {
	Packet string `json:"packet"`
	Source string `json:"source"`
	Result string `json:"result"`
	Count  uint64 `json:"count"`
}

func (ts *turnStats) snapshot() []TurnCount {
	var out []TurnCount
	add := func(name string, pt *packetTurns) {
		for si := range pt {
			for ri := range pt[si] {
				if v := pt[si][ri].Load(); v > 0 {
					out = append(out, TurnCount{Packet: name, Source: turnSources[si], Result: slotName(ri), Count: v})
				}
			}
		}
	}
	names := make([]string, 0, len(ts.packets))
	for n := range ts.packets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, ts.packets[n])
	}
	add(unknownPacket, &ts.unknown)
	return out
}
