package routemesh

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/wire"
)

// channelOwner is the runtime side of one ChannelName registration.
type channelOwner struct {
	name  string
	role  Role
	ref   *actors.Ref // Server role only: channel:<name>
	track *hungTracker
	// last is the last selection decision made by this node on the channel.
	last  atomic.Pointer[Selection]
	picks atomic.Uint64 // selections made, for sampling the report
}

// Selection is the last select-one decision of a channel, for monitoring:
// the candidates and why each one was skipped.
type Selection struct {
	At         time.Time   `json:"at"`
	Outcome    string      `json:"outcome"`
	RID        string      `json:"rid,omitempty"`
	Candidates []Candidate `json:"candidates"`
}

// Candidate is one Server member considered by a selection.
type Candidate struct {
	RID    string `json:"rid"`
	Weight uint16 `json:"weight"`
	Local  bool   `json:"local,omitempty"`
	// Skip says why it was not eligible: "", "not ready", "weight 0",
	// "draining", "at capacity", "local".
	Skip string `json:"skip,omitempty"`
}

// MemberResult is one member's terminal result of a Logical Multicast.
type MemberResult struct {
	RID   string
	Reply []byte
	Err   error
}

// startChannels spawns channel:<name> owners under a channels supervisor.
func (n *Node) startChannels(parent *actors.Ref) error {
	n.channels = map[string]*channelOwner{}
	sup, err := n.sys.Spawn(actors.Spec{
		Name: "channels", Kind: "supervisor", Parent: parent,
		Producer: func() actor.Actor { return nopActor{} },
	})
	if err != nil {
		return err
	}
	weights := map[string]uint16{}
	for _, reg := range n.cfg.channels {
		co := &channelOwner{name: reg.name, role: reg.role}
		if reg.role == RoleServer {
			reg := reg
			weights[reg.name] = uint16(reg.weight)
			conc := reg.concurrency
			if conc <= 0 {
				conc = n.cfg.HandlerConcurrency
			}
			slots := make(chan struct{}, conc)
			co.track = newHungTracker()
			track := co.track
			co.ref, err = n.sys.Spawn(actors.Spec{
				Name: "channel:" + reg.name, Kind: "channel", Parent: sup,
				MaxMessages: n.cfg.Socket.MailboxMessageBudget, MaxBytes: n.cfg.Socket.MailboxByteBudget,
				Producer: func() actor.Actor {
					return &ownerActor{n: n, channel: reg.name, requests: reg.requests, sends: reg.sends, slots: slots, track: track}
				},
			})
			if err != nil {
				return err
			}
		}
		n.channels[reg.name] = co
	}
	n.weights.Store(&weights)
	n.table.Apply(selection.Member{RID: n.rid, Generation: n.gen, Revision: 1, Servers: weights, Local: true})
	return nil
}

// servers returns this node's current Server weights (do not modify).
func (n *Node) servers() map[string]uint16 { return *n.weights.Load() }

// headroom returns the admission headroom (free message slots) of every
// Server channel of this node.
func (n *Node) headroom() map[string]uint32 {
	out := make(map[string]uint32, len(n.channels))
	paused := n.admitPaused.Load()
	for name, co := range n.channels {
		if co.ref != nil {
			if paused {
				out[name] = 0 // refusing new work: callers skip this node
			} else {
				out[name] = quotaHeadroom(co.ref)
			}
		}
	}
	return out
}

func quotaHeadroom(r *actors.Ref) uint32 {
	st := r.Quota().Stats()
	if st.MaxMessages <= 0 {
		return 1 << 31
	}
	free := st.MaxMessages - st.Depth
	if st.MaxBytes > 0 && st.Bytes >= st.MaxBytes {
		free = 0
	}
	return uint32(max(free, 0))
}

// ---- select-one --------------------------------------------------------

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

// SendChannel sends a one-way message on channel to one Server chosen by
// weight. It ends when the message is queued for that Server (or refused).
func (n *Node) SendChannel(ctx context.Context, channel, packet string, payload []byte) error {
	n.cnt.calls.Add(1)
	l, err := n.selectOne(channel)
	if err == nil {
		err = n.submitOneWay(ctx, l, wire.Envelope{Kind: wire.KindSend, Channel: channel, Packet: packet, Payload: payload})
	}
	n.cnt.result(err)
	return err
}

func (n *Node) channelFor(channel string) (*channelOwner, error) {
	if st := n.State(); st >= NodeStopping {
		return nil, wire.ErrShuttingDown
	}
	co := n.channels[channel]
	if co == nil {
		return nil, &ConfigError{Mesh: n.cfg.Mesh, Channel: channel, Err: ErrNoChannelRole}
	}
	return co, nil
}

// candidates builds the selection input of channel from the target table
// and the live state of each member.
// buf and lbuf are the caller's (usually stack) buffers.
func (n *Node) candidates(channel string, buf []selection.Candidate, lbuf []*link) ([]selection.Candidate, []*link) {
	targets := n.table.Snapshot().ServersShared(channel)
	links := *n.links.Load()
	ls := lbuf[:0]
	for range targets {
		ls = append(ls, nil)
	}
	for i, t := range targets {
		c := selection.Candidate{RID: t.RID, Weight: t.Weight, Local: t.Local}
		if t.Local {
			c.Ready = true
			c.Draining = n.State() == NodeDraining
			if co := n.channels[channel]; co != nil && co.ref != nil {
				c.Full = n.admitPaused.Load() || quotaHeadroom(co.ref) == 0
			}
			ls[i] = n.self
		} else if l := links[t.RID]; l != nil {
			c.Ready = true
			c.Draining = l.draining.Load()
			c.Full = l.isFull(channel)
			ls[i] = l
		}
		buf = append(buf, c)
	}
	return buf, ls
}

func (n *Node) selectOne(channel string) (*link, error) {
	co, err := n.channelFor(channel)
	if err != nil {
		return nil, err
	}
	var cbuf [8]selection.Candidate
	var lbuf [8]*link
	cands, ls := n.candidates(channel, cbuf[:0], lbuf[:0])
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
		s.Candidates[i] = Candidate{RID: c.RID, Weight: c.Weight}
		if c.Skip != 0 {
			s.Candidates[i].Skip = c.Skip.String()
		}
	}
	return s
}

// ---- multicast ---------------------------------------------------------

// Multicast sends a request on channel to every eligible remote Server
// member exactly once (ready, weight > 0, not draining — the local node is
// not a target), regardless of weight size, and returns each member's
// terminal result, sorted by RID. A member at capacity answers ErrBusy in
// its own result. No eligible member → ErrNoTarget.
func (n *Node) Multicast(ctx context.Context, channel, packet string, payload []byte) ([]MemberResult, error) {
	if _, err := n.channelFor(channel); err != nil {
		return nil, err
	}
	cands, ls := n.candidates(channel, make([]selection.Candidate, 0, 8), nil)
	targets, _ := selection.Multicast(cands)
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no eligible remote Server on %s", wire.ErrNoTarget, channel)
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

// ---- weights -----------------------------------------------------------

// SetWeight changes this node's weight on a Server channel at runtime
// (0..10000; anything else is a configuration error). The descriptor
// revision increases, peers get the new set at once (and on every
// heartbeat), and only calls started afterwards see it. No reconnect.
func (n *Node) SetWeight(ctx context.Context, channel string, weight int) error {
	if err := CheckWeight(weight); err != nil {
		ce := err.(*ConfigError)
		ce.Mesh, ce.Channel = n.cfg.Mesh, channel
		return ce
	}
	co := n.channels[channel]
	if co == nil || co.role != RoleServer {
		return &ConfigError{Mesh: n.cfg.Mesh, Channel: channel, Err: ErrUnknownChannel}
	}
	_, err := n.ref.Request(ctx, &setWeight{channel: channel, weight: uint16(weight)})
	return err
}

type setWeight struct {
	channel string
	weight  uint16
}

// applyWeight runs on the mesh actor: the single writer of weights and
// revision.
func (m *meshActor) applyWeight(msg *setWeight) {
	n := m.n
	cur := n.servers()
	next := make(map[string]uint16, len(cur))
	for k, v := range cur {
		next[k] = v
	}
	next[msg.channel] = msg.weight
	// Weights first, then the revision: a heartbeat built concurrently reads
	// the revision before the weights, so it can never pair the new
	// revision with the old weights (peers would then refuse the real
	// update as not newer).
	n.weights.Store(&next)
	rev := n.revision.Add(1)
	n.table.Apply(selection.Member{RID: n.rid, Generation: n.gen, Revision: rev, Servers: next, Local: true})
	up := wire.Envelope{Kind: wire.KindWeightUpdate, Generation: n.gen, Revision: rev, Servers: next}
	for _, l := range *n.links.Load() {
		_ = l.p.w.control(outItem{env: up})
	}
	n.log.Info().Str("channel", msg.channel).Uint16("weight", msg.weight).Uint64("revision", rev).Msg("weight changed")
	if n.onRevision != nil {
		n.onRevision()
	}
}

// applyMember applies a peer's Server set of generation gen and revision
// rev: only a larger revision within the same generation changes the table.
func (n *Node) applyMember(l *link, gen, rev uint64, servers map[string]uint16) {
	if gen != l.gen || rev == 0 {
		return
	}
	if servers == nil {
		servers = map[string]uint16{}
	}
	m := selection.Member{RID: l.rid, Generation: gen, Revision: rev, Servers: servers}
	if m.Validate() != nil {
		n.cnt.protocolErrors.Add(1)
		return
	}
	n.table.Apply(m)
}

// ---- drain -------------------------------------------------------------

// Drain takes the node out of new channel selection and multicast at once
// (a drain notice to peers and the flag in heartbeats and descriptor), keeps
// serving submitted work and Node-direct calls, and returns when no
// admitted work is left (nil) or when the drain timeout (or ctx) passes
// (ErrDrainTimeout). Drain adds no error of its own to any call.
func (n *Node) Drain(ctx context.Context) error {
	if !n.state.CompareAndSwap(uint32(NodeReady), uint32(NodeDraining)) && n.State() != NodeDraining {
		return wire.ErrShuttingDown
	}
	if _, err := n.ref.Request(ctx, &drainMsg{}); err != nil {
		return err
	}
	deadline := time.Now().Add(n.cfg.DrainTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for n.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d admitted messages still running", ErrDrainTimeout, n.inflight.Load())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrDrainTimeout, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	n.drained.Store(true)
	n.log.Info().Msg("meshnode drained")
	return nil
}

type drainMsg struct{}

func (m *meshActor) announceDrain() {
	n := m.n
	n.revision.Add(1)
	up := wire.Envelope{Kind: wire.KindDrain, Draining: true, Generation: n.gen}
	for _, l := range *n.links.Load() {
		_ = l.p.w.control(outItem{env: up})
	}
	if n.onRevision != nil {
		n.onRevision()
	}
}

// ---- per-link capacity ---------------------------------------------------

// isFull reports whether the peer last said channel has no headroom.
func (l *link) isFull(channel string) bool {
	if b := l.full[channel]; b != nil {
		return b.Load()
	}
	return false
}

// setHeadroom records what the peer reported for its channels.
func (l *link) setHeadroom(h map[string]uint32) {
	for ch, v := range h {
		if b := l.full[ch]; b != nil {
			b.Store(v == 0)
		}
	}
}

// ---- latency -------------------------------------------------------------

// latencyBuckets are the upper bounds of the call latency histogram.
var latencyBuckets = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 5 * time.Second,
}

// histogram is a fixed-bucket latency histogram of atomics (a leaf).
type histogram struct {
	counts [16]atomic.Uint64 // len(latencyBuckets)+1 (the last is +Inf)
	sumNs  atomic.Uint64
}

func (h *histogram) observe(d time.Duration) {
	i := sort.Search(len(latencyBuckets), func(i int) bool { return d <= latencyBuckets[i] })
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// LatencyBucket is one histogram bucket: calls that took at most LE.
type LatencyBucket struct {
	LE    string `json:"le"`
	Count uint64 `json:"count"`
}

func (h *histogram) snapshot() []LatencyBucket {
	out := make([]LatencyBucket, 0, len(latencyBuckets)+1)
	for i, b := range latencyBuckets {
		out = append(out, LatencyBucket{LE: b.String(), Count: h.counts[i].Load()})
	}
	return append(out, LatencyBucket{LE: "+Inf", Count: h.counts[len(latencyBuckets)].Load()})
}

// newRand returns a seeded generator for weighted selection.
func newRand(seed uint64) *rand.Rand {
	if seed == 0 {
		seed = ident.Generation()
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
