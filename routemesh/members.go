package routemesh

import (
	"sort"
	"time"
)

// Members the node knows, for the live view: built from what the node
// holds already (its links, its selection table, its discovery intents and
// the peers that went away), never from a store read.

// goneKeep is how long a peer that went away stays listed, and goneMax
// how many are kept.
const (
	goneKeep = 10 * time.Minute
	goneMax  = 64
)

// GonePeer is a peer whose ready connection ended: "lost" (liveness, a
// closed socket, a restart) or "departed" (it said goodbye), with the
// reason and the time.
type GonePeer struct {
	RID    string    `json:"rid"`
	How    string    `json:"how"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// MemberStatus is one member of the mesh as this node sees it: itself,
// each peer (its connection state; for a peer that went away, how and
// why), and the Server channels with their weights each one announced.
type MemberStatus struct {
	RID   string `json:"rid"`
	Self  bool   `json:"self,omitempty"`
	State string `json:"state"` // a PeerState, "self", "lost" or "departed"
	// Channels maps each Server channel the member announced to its
	// weight (from its heartbeats and weight updates).
	Channels map[string]uint16 `json:"channels,omitempty"`
	// Reason and Since: why and since when a peer is lost, departed or
	// not connected.
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"`
}

// wentAway records a ready peer's end (the mesh actor's ring).
func (m *meshActor) wentAway(rid string, departed bool, reason error, now time.Time) {
	how := "lost"
	if departed {
		how = "departed"
	}
	m.gone = append(m.gone, GonePeer{RID: rid, How: how, Reason: errString(reason), At: now})
	m.trimGone(now)
}

func (m *meshActor) trimGone(now time.Time) {
	keep := m.gone[:0]
	for _, g := range m.gone {
		if now.Sub(g.At) < goneKeep {
			keep = append(keep, g)
		}
	}
	if len(keep) > goneMax {
		keep = append(keep[:0], keep[len(keep)-goneMax:]...)
	}
	m.gone = keep
}

// members builds the member list of st (its peers filled in already).
func (m *meshActor) members(st *Status, now time.Time) {
	m.trimGone(now)
	byRID := map[string]*MemberStatus{}
	add := func(rid string) *MemberStatus {
		ms := byRID[rid]
		if ms == nil {
			ms = &MemberStatus{RID: rid}
			byRID[rid] = ms
		}
		return ms
	}
	self := add(m.n.rid)
	self.Self, self.State = true, "self"
	for _, p := range st.Peers {
		ms := add(p.RID)
		ms.State, ms.Since, ms.Reason = p.State.String(), p.Since, p.LastError
	}
	for _, mem := range m.n.table.Snapshot().Members() {
		ms := add(mem.RID)
		if ms.State == "" {
			ms.State = PeerReady.String()
		}
		if len(mem.Servers) > 0 {
			ms.Channels = make(map[string]uint16, len(mem.Servers))
			for ch, w := range mem.Servers {
				ms.Channels[ch] = w
			}
		}
	}
	for _, g := range m.gone {
		ms := add(g.RID)
		if ms.State == PeerReady.String() || ms.State == PeerDraining.String() || ms.Self {
			continue // back since
		}
		ms.State, ms.Reason, ms.Since = g.How, g.Reason, g.At
	}
	st.Members = make([]MemberStatus, 0, len(byRID))
	for _, ms := range byRID {
		st.Members = append(st.Members, *ms)
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].RID < st.Members[j].RID })
	st.Gone = append([]GonePeer(nil), m.gone...)
	for i := len(m.gone) - 1; i >= 0; i-- {
		if m.gone[i].How == "lost" {
			g := m.gone[i]
			st.LastPeerLost = &g
			break
		}
	}
}
