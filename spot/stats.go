package spot

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// fenced counts an activation ended by fencing and remembers the last
// one (kind/ID, why, when) for the live view.
func (rt *runtime) fenced(kind, id, why string) {
	rt.stats.fenced.Add(1)
	rt.stats.lastFenced.Store(&Event{What: kind + "/" + id, Reason: why, At: time.Now()})
}

// Event is the last occurrence of a counted event: what, why and when.
type Event struct {
	What   string    `json:"what"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Member is an Object Server as this node's Spot runtime knows it (from
// its member listing): its placement weight, the kinds it hosts (nil: not
// listed, so every kind) and whether it drains.
type Member struct {
	RID             string   `json:"rid"`
	PlacementWeight uint32   `json:"placement_weight"`
	Kinds           []string `json:"kinds,omitempty"`
	Draining        bool     `json:"draining,omitempty"`
}

// counters are the runtime's totals (leaf atomics).
type counters struct {
	redirects      atomic.Uint64 // requests answered with a redirect
	fenced         atomic.Uint64 // activations ended because the lease was lost
	overlaps       atomic.Uint64 // releases that found the record changed under a live activation
	sendsDropped   atomic.Uint64 // one-way messages that reached no owner
	asyncAbandoned atomic.Uint64 // replies to a Spot's asynchronous calls dropped: its activation ended first
	leaseGens      atomic.Uint64 // lease generations started
	incarnations   atomic.Uint64 // store shard incarnation changes seen
	saves          atomic.Uint64 // state snapshots written
	saveErrors     atomic.Uint64 // state snapshots the store did not take
	rereads        atomic.Uint64 // states read again after a save of unknown outcome
	moves          atomic.Uint64 // Spots moved away from this node
	moveWaits      atomic.Uint64 // moves that waited for open deferred requests
	rebalanced     atomic.Uint64 // of them, by the rebalancer
	notHosted      atomic.Uint64 // requests for a kind this node does not host
	timerTurns     atomic.Uint64 // timer firings run as turns
	remFired       atomic.Uint64 // reminder handlers run (returned nil)
	remErrors      atomic.Uint64 // reminder handlers that returned an error
	remMerged      atomic.Uint64 // reminder due times skipped (merged into a later firing)
	remScans       atomic.Uint64 // reminder index parts read
	remDelivered   atomic.Uint64 // due reminders delivered to their Spots
	remFailed      atomic.Uint64 // of them, deliveries that ended with an error
	lastFenced     atomic.Pointer[Event]
}

type kindCounters struct {
	active        atomic.Int64
	activations   atomic.Uint64
	deactivations atomic.Uint64
}

// KindStats is one kind's counts on one node.
type KindStats struct {
	Kind          string `json:"kind"`
	Active        int64  `json:"active"`
	Activations   uint64 `json:"activations"`
	Deactivations uint64 `json:"deactivations"`
	// Turns counts the kind's turns by packet (registered names, replies
	// as "_reply", anything else as "_unknown"), source and result.
	Turns []TurnCount `json:"turns,omitempty"`
}

// Stats is what a node's Spot runtime reports (admin GET /spots).
type Stats struct {
	Role  string      `json:"role"`
	Kinds []KindStats `json:"kinds"`
	// Redirects counts requests this node answered with "not owner".
	Redirects uint64 `json:"redirects"`
	// Fenced counts activations ended because the ownership lease was lost
	// (or the record moved on under them); LastFenced is the latest.
	Fenced     uint64 `json:"fenced"`
	LastFenced *Event `json:"last_fenced,omitempty"`
	// Members lists the Object Servers this node knows, for placement.
	Members []Member `json:"members,omitempty"`
	// Overlaps counts releases that found the record changed under a live
	// activation: evidence of a lost store write (logged too).
	Overlaps uint64 `json:"overlaps"`
	// StoreIncarnations counts changes of a store shard's incarnation seen
	// under active Spots (a failover or an empty restart: acknowledged
	// writes may be lost; the Spots claimed there are fenced).
	StoreIncarnations uint64 `json:"store_incarnations"`
	// Saves and SaveErrors count state snapshots written and not written
	// (persistent kinds).
	Saves      uint64 `json:"saves"`
	SaveErrors uint64 `json:"save_errors"`
	// StateRereads counts activations that read their state again from the
	// store because a ReplyAfterWrite save ended with ErrOutcomeUnknown.
	StateRereads uint64 `json:"state_rereads"`
	// Moves counts Spots handed from this node to another; Rebalanced
	// those of them the rebalancer moved.
	Moves      uint64 `json:"moves"`
	Rebalanced uint64 `json:"rebalanced"`
	// MoveWaits counts moves whose Spot had requests left open (Defer) or
	// replies owed to its asynchronous calls: the move waited for them
	// before the Spot's last turn.
	MoveWaits uint64 `json:"move_waits"`
	// NotHosted counts requests this node answered "kind not hosted"
	// (for a kind it does not host; none of them ran).
	NotHosted uint64 `json:"not_hosted"`
	// TimerTurns counts timer firings run as turns; TimersMerged the due
	// times merged into another firing (the previous one still waiting,
	// or the clock stalled); TimerRetries the firings that found the
	// Spot's mailbox full (a one-shot is tried again, a repeating timer
	// fires at its next due time).
	TimerTurns   uint64 `json:"timer_turns"`
	TimersMerged uint64 `json:"timers_merged"`
	TimerRetries uint64 `json:"timer_retries"`
	// Reminders counts reminder firings on this node's Spots and the
	// scans this node made of the due-time index parts it is in charge of.
	Reminders ReminderStats `json:"reminders"`
	// SendsDropped counts one-way messages that reached no owner.
	SendsDropped uint64 `json:"sends_dropped"`
	// AsyncAbandoned counts replies to the asynchronous calls of Spots'
	// turns that no turn took: the Spot's activation ended first (a drain
	// after its grace, a move, a stop) or lost its lease.
	AsyncAbandoned uint64 `json:"async_abandoned"`
	// LeaseGeneration is the current ownership lease generation, and
	// LeaseValid whether it is valid now.
	LeaseGeneration uint64 `json:"lease_generation"`
	LeaseValid      bool   `json:"lease_valid"`
	// Cached is the number of caller-cache entries.
	Cached int `json:"cached"`
}

// ReminderStats are a node's reminder counts.
type ReminderStats struct {
	// Fired counts handlers run to completion on this node's Spots;
	// Errors those that returned an error (tried again); Merged the due
	// times skipped because a firing came later than the next one.
	Fired  uint64 `json:"fired"`
	Errors uint64 `json:"errors"`
	Merged uint64 `json:"merged"`
	// Scans counts reads of the index parts this node scans; Delivered
	// the due entries it delivered as calls, DeliveryErrors those calls
	// that ended with an error (delivered again at a later scan).
	Scans          uint64 `json:"scans"`
	Delivered      uint64 `json:"delivered"`
	DeliveryErrors uint64 `json:"delivery_errors"`
}

// StatsOf returns the Spot runtime's counts of node n; ErrNotEnabled
// without one.
func StatsOf(n *routemesh.Node) (Stats, error) {
	rt, err := of(n)
	if err != nil {
		return Stats{}, err
	}
	return rt.statsNow(), nil
}

func (rt *runtime) statsNow() Stats {
	gen, valid := rt.lease.holder(time.Now())
	s := Stats{Role: rt.role.String(), Redirects: rt.stats.redirects.Load(), Fenced: rt.stats.fenced.Load(),
		Overlaps: rt.stats.overlaps.Load(), SendsDropped: rt.stats.sendsDropped.Load(), AsyncAbandoned: rt.stats.asyncAbandoned.Load(),
		StoreIncarnations: rt.stats.incarnations.Load(),
		Saves:             rt.stats.saves.Load(), SaveErrors: rt.stats.saveErrors.Load(), StateRereads: rt.stats.rereads.Load(), Moves: rt.stats.moves.Load(), MoveWaits: rt.stats.moveWaits.Load(), Rebalanced: rt.stats.rebalanced.Load(),
		NotHosted:  rt.stats.notHosted.Load(),
		TimerTurns: rt.stats.timerTurns.Load(), TimersMerged: rt.clock.merged.Load(), TimerRetries: rt.clock.retried.Load(),
		LeaseGeneration: gen, LeaseValid: valid, Cached: rt.cache.len()}
	s.LastFenced = rt.stats.lastFenced.Load()
	s.Reminders = ReminderStats{Fired: rt.stats.remFired.Load(), Errors: rt.stats.remErrors.Load(), Merged: rt.stats.remMerged.Load(),
		Scans: rt.stats.remScans.Load(), Delivered: rt.stats.remDelivered.Load(), DeliveryErrors: rt.stats.remFailed.Load()}
	for _, m := range *rt.members.Load() {
		if m.server {
			s.Members = append(s.Members, Member{RID: m.rid, PlacementWeight: m.weight, Kinds: m.kinds, Draining: m.draining})
		}
	}
	for _, ks := range rt.order {
		s.Kinds = append(s.Kinds, KindStats{Kind: ks.reg.name, Active: ks.stats.active.Load(),
			Activations: ks.stats.activations.Load(), Deactivations: ks.stats.deactivations.Load(), Turns: ks.turns.snapshot()})
	}
	return s
}

// Active lists up to limit IDs of the kind's Spots active on node n (the
// tree and admin list Spots only on request: a node may hold a million).
func Active(n *routemesh.Node, kind string, limit int) ([]string, error) {
	rt, err := of(n)
	if err != nil {
		return nil, err
	}
	ks := rt.kinds[kind]
	if ks == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownKind, kind)
	}
	return ks.dir.ids(limit), nil
}
