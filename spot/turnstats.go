package spot

import (
	"sort"
	"sync/atomic"

	"github.com/zlink-go/zlink/internal/zerr"
)

// turnSources are the sources a turn is counted under (Context.Source).
var turnSources = [...]string{SourceRequest, SourceSend, SourceReply, SourceTimer}

// unknownPacket is the label of the turns for packets the kind has no
// handler for (only registered names become labels).
const unknownPacket = "_unknown"

// replyTurnPacket is the label of OnReply turns.
const replyTurnPacket = "_reply"

// turnSlots counts results by the results' table: 0 is ok, each row its
// own slot, the last "other" (zerr.SlotOf).
const turnSlots = zerr.Slots

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

func resultSlot(err error) int { return zerr.SlotOf(err) }

func slotName(i int) string { return zerr.SlotName(i) }

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
