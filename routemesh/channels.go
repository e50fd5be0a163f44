package routemesh

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/actors"
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
