package routemesh

import (
	"sort"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
)

// UnknownPacket is the packet label under which an owner counts messages
// for packets it has no handler for: metrics label only registered packet
// names, so a stranger cannot grow their label sets.
const UnknownPacket = "_unknown"

// resultSlots counts results by the results' table: slot 0 is "ok",
// each row its own slot, the last any other error (zerr.SlotOf).
const resultSlots = zerr.Slots

// packetStats is what one handler scope served for one packet (leaf
// atomics), in statShards shards: each pool worker counts into the shard
// of its run slot, so workers running side by side on different cores
// mostly add to words of their own; the snapshot sums the shards.
type packetStats struct {
	shards [statShards]packetShard
}

// statShards is how many shards a packet's counters have.
const statShards = 4

// packetShard is one shard of a packet's counters.
type packetShard struct {
	sends   atomic.Uint64 // one-way messages whose handler ran
	results [resultSlots]atomic.Uint64
	latency histogram // handler run time (requests and sends)
	queued  histogram // arrival to handler start
	_       [64]byte  // the next shard's first words on another cache line
}

// servedStats counts what one handler scope (a channel's Server, or the
// Node-direct scope) served: per registered packet, and one entry for
// every other packet name. Built before the owner starts and shared across
// its restarts; the map is never written afterwards.
type servedStats struct {
	channel string
	packets map[string]*packetStats
	unknown packetStats
}

func newServedStats(channel string, requests map[string]RequestHandler, sends map[string]SendHandler) *servedStats {
	s := &servedStats{channel: channel, packets: map[string]*packetStats{}}
	for p := range requests {
		s.packets[p] = &packetStats{}
	}
	for p := range sends {
		if s.packets[p] == nil {
			s.packets[p] = &packetStats{}
		}
	}
	return s
}

// of returns the counters of packet (the unknown entry for a packet
// without a handler).
func (s *servedStats) of(packet string) *packetStats {
	if p := s.packets[packet]; p != nil {
		return p
	}
	return &s.unknown
}

// began records, in shard sh (the worker's), a handler starting now for a
// message that arrived at arrived; it returns the time the message
// waited, for ended. (Durations since arrived read only the monotonic
// clock: cheaper than time.Now.)
func (p *packetStats) began(sh int, arrived time.Time) time.Duration {
	queued := time.Since(arrived)
	p.shards[sh].queued.observe(queued)
	return queued
}

// ended records, in shard sh, a handler for a message that arrived at
// arrived and waited queued finishing with err (a request) or a one-way
// message (send).
func (p *packetStats) ended(sh int, arrived time.Time, queued time.Duration, send bool, err error) {
	ps := &p.shards[sh]
	ps.latency.observe(time.Since(arrived) - queued)
	if send {
		ps.sends.Add(1)
		return
	}
	ps.result(err)
}

// result counts, in shard sh, one request's result.
func (p *packetStats) result(sh int, err error) { p.shards[sh].result(err) }

// sent counts, in shard sh, a one-way message.
func (p *packetStats) sent(sh int) { p.shards[sh].sends.Add(1) }

func (ps *packetShard) result(err error) {
	slot := 0
	if err != nil {
		slot = resultSlot(err)
	}
	ps.results[slot].Add(1)
}

// ServedStatus is what one handler scope of a node served: the Server of
// a channel, or the Node-direct scope (Channel ""). Counts are totals
// since the node started.
type ServedStatus struct {
	Channel string `json:"channel"`
	// Running is the number of handlers running now.
	Running int64          `json:"running"`
	Packets []ServedPacket `json:"packets"`
}

// ServedPacket is what a scope served for one packet: registered packets
// by name, every other name together as UnknownPacket.
type ServedPacket struct {
	Packet string `json:"packet"`
	// Requests counts requests answered, by result: "ok" or the error
	// code's name ("handler", "unknown_packet", "shutting_down", …).
	Requests map[string]uint64 `json:"requests,omitempty"`
	// Sends counts one-way messages whose handler ran.
	Sends uint64 `json:"sends"`
	// Latency is the handlers' run time, LatencySum its total; Queued the
	// time from a message's arrival to its handler's start, QueuedSum its
	// total.
	Latency    []LatencyBucket `json:"latency"`
	LatencySum time.Duration   `json:"latency_sum_ns"`
	Queued     []LatencyBucket `json:"queued"`
	QueuedSum  time.Duration   `json:"queued_sum_ns"`
}

// Total is the number of requests answered, whatever the result.
func (p ServedPacket) Total() uint64 {
	var n uint64
	for _, v := range p.Requests {
		n += v
	}
	return n
}

// snapshot is what the scope served, with running handlers running now.
func (s *servedStats) snapshot(running int64) ServedStatus {
	out := ServedStatus{Channel: s.channel, Running: running}
	names := make([]string, 0, len(s.packets))
	for name := range s.packets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out.Packets = append(out.Packets, s.packets[name].snapshot(name))
	}
	if u := s.unknown.snapshot(UnknownPacket); u.Total() > 0 || u.Sends > 0 {
		out.Packets = append(out.Packets, u)
	}
	return out
}

func (p *packetStats) snapshot(name string) ServedPacket {
	var lat, q [len(latencyBuckets) + 1]uint64
	var latSum, qSum uint64
	var results [resultSlots]uint64
	sp := ServedPacket{Packet: name}
	for i := range p.shards {
		ps := &p.shards[i]
		sp.Sends += ps.sends.Load()
		ps.latency.addTo(&lat, &latSum)
		ps.queued.addTo(&q, &qSum)
		for j := range ps.results {
			results[j] += ps.results[j].Load()
		}
	}
	sp.Latency, sp.LatencySum = bucketsOf(&lat), time.Duration(latSum)
	sp.Queued, sp.QueuedSum = bucketsOf(&q), time.Duration(qSum)
	for i, v := range results {
		if v == 0 {
			continue
		}
		if sp.Requests == nil {
			sp.Requests = map[string]uint64{}
		}
		sp.Requests[zerr.SlotName(i)] += v
	}
	return sp
}

// served lists what the node's handler scopes served: the Node-direct
// scope first, then each Server channel by name.
func (n *Node) served() []ServedStatus {
	out := []ServedStatus{n.directServed.snapshot(n.directPool.track.running())}
	names := make([]string, 0, len(n.channels))
	for name, co := range n.channels {
		if co.served != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		co := n.channels[name]
		out = append(out, co.served.snapshot(co.pool.track.running()))
	}
	return out
}
