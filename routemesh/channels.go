package routemesh

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
)

// channelOwner is the part of one ChannelName registration that outlives
// the actors: the Server owner's handler pool with its hung tracker
// (shared by every incarnation of channel:<name>) and the selection
// report. The owner actor itself is in the node's view.
type channelOwner struct {
	name   string
	role   Role
	reg    *channelReg
	pool   *handlerPool // Server only: running handlers and their deadlines
	served *servedStats // Server only: what it served
	// last is the last selection decision made by this node on the channel.
	last  atomic.Pointer[Selection]
	picks atomic.Uint64 // selections made, for sampling the report
	// sel is the select-one input cached for the current view and table.
	sel atomic.Pointer[selCache]
	// reported is the select-one input the last decision report was made
	// from: a new input (a drain, a weight change, a peer lost) is reported
	// at its first call.
	reported atomic.Pointer[selCache]
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

// initChannels builds the durable part of every registration (before any
// actor starts; immutable afterwards).
func (n *Node) initChannels() {
	n.channels = map[string]*channelOwner{}
	for _, reg := range n.cfg.channels {
		co := &channelOwner{name: reg.name, role: reg.role, reg: reg}
		if reg.role == RoleServer {
			conc := reg.concurrency
			if conc <= 0 {
				conc = n.cfg.HandlerConcurrency
			}
			co.pool = newHandlerPool(n.ctx, conc)
			co.served = newServedStats(reg.name, reg.requests, reg.sends)
		}
		n.channels[reg.name] = co
	}
	n.directServed = newServedStats("", n.cfg.directRequests, n.cfg.directSends)
	n.directPool = newHandlerPool(n.ctx, n.cfg.HandlerConcurrency)
}

// initialWeights is the Server weight set the configuration starts with.
func (n *Node) initialWeights() map[string]uint16 {
	w := map[string]uint16{}
	for _, reg := range n.cfg.channels {
		if reg.role == RoleServer {
			w[reg.name] = uint16(reg.weight)
		}
	}
	return w
}

// directSpec is the Node-direct owner.
func (n *Node) directSpec() actors.Spec {
	return actors.Spec{
		Name: "direct", Kind: "owner",
		MaxMessages: n.cfg.Socket.MailboxMessageBudget, MaxBytes: n.cfg.Socket.MailboxByteBudget,
		Producer: func() actors.Actor {
			return &ownerActor{n: n, requests: n.cfg.directRequests, sends: n.cfg.directSends,
				pool: n.directPool, served: n.directServed}
		},
	}
}

// channelsActor is the channels supervisor of one mesh actor incarnation:
// in Started it spawns one channel:<name> owner per Server registration
// and reports them to the mesh actor, so a restart of this supervisor (or
// of the mesh actor) rebuilds every owner from the configuration.
type channelsActor struct {
	n     *Node
	mesh  *actors.Ref
	epoch uint64
}

func (a *channelsActor) Receive(c *actors.Context) {
	if _, ok := c.Message().(*actors.Started); !ok {
		return
	}
	n := a.n
	owners := map[string]*actors.Ref{}
	for name, co := range n.channels {
		if co.role != RoleServer {
			continue
		}
		co := co
		ref, err := c.Spawn(actors.Spec{
			Name: "channel:" + name, Kind: "channel",
			MaxMessages: n.cfg.Socket.MailboxMessageBudget, MaxBytes: n.cfg.Socket.MailboxByteBudget,
			Producer: func() actors.Actor {
				return &ownerActor{n: n, channel: co.name, requests: co.reg.requests, sends: co.reg.sends, pool: co.pool, served: co.served}
			},
		})
		if err != nil {
			panic(fmt.Errorf("zlink: mesh %s: spawn channel %s: %w", n.cfg.Mesh, name, err))
		}
		owners[name] = ref
	}
	_ = a.mesh.TellControl(&channelsUp{epoch: a.epoch, owners: owners})
}

// headroom returns the admission headroom (free message slots) of every
// Server channel of this node.
func (n *Node) headroom(v *view) map[string]uint32 {
	out := make(map[string]uint32, len(v.owners))
	for name, ref := range v.owners {
		out[name] = headroomOf(v, ref)
	}
	return out
}

// headroomOf is the headroom the node reports for one owner.
func headroomOf(v *view, ref *actors.Ref) uint32 {
	if v.paused {
		return 0 // refusing new work: callers skip this node
	}
	return quotaHeadroom(ref)
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

// ---- candidates ---------------------------------------------------------

func (n *Node) channelFor(v *view, channel string) (*channelOwner, error) {
	if err := v.refusal(n); err != nil {
		return nil, err
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
func (n *Node) candidates(v *view, channel string, buf []selection.Candidate, lbuf []*link) ([]selection.Candidate, []*link) {
	targets := n.table.Snapshot().ServersShared(channel)
	links := v.links
	ls := lbuf[:0]
	for range targets {
		ls = append(ls, nil)
	}
	for i, t := range targets {
		c := selection.Candidate{RID: t.RID, Weight: t.Weight, Local: t.Local}
		if t.Local {
			c.Ready = true
			c.Draining = v.state == NodeDraining
			if ref := v.owners[channel]; ref != nil {
				c.Full = v.paused || quotaHeadroom(ref) == 0
			} else {
				c.Full = true // the owner is restarting
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
