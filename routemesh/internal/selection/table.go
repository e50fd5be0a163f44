package selection

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
)

// Member is one MeshNode's channel Server membership as published in its
// descriptor (or handshake, or weight update).
type Member struct {
	RID        string
	Generation uint64            // lifecycle generation; non-zero; compared for equality only
	Revision   uint64            // descriptor revision within the generation; >= 1
	Servers    map[string]uint16 // ChannelName → weight (0..MaxWeight); may be empty
	Local      bool              // the member is this node
}

// Validate reports a field out of range, wrapping ErrInvalidMember.
func (m Member) Validate() error {
	switch {
	case m.RID == "":
		return fmt.Errorf("%w: empty RID", ErrInvalidMember)
	case m.Generation == 0:
		return fmt.Errorf("%w: %s: generation 0", ErrInvalidMember, m.RID)
	case m.Revision == 0:
		return fmt.Errorf("%w: %s: revision 0", ErrInvalidMember, m.RID)
	}
	for ch, w := range m.Servers {
		if ch == "" {
			return fmt.Errorf("%w: %s: empty channel name", ErrInvalidMember, m.RID)
		}
		if w > MaxWeight {
			return fmt.Errorf("%w: %s: channel %s weight %d above %d", ErrInvalidMember, m.RID, ch, w, MaxWeight)
		}
	}
	return nil
}

func (m Member) clone() Member {
	m.Servers = maps.Clone(m.Servers)
	if m.Servers == nil {
		m.Servers = map[string]uint16{}
	}
	return m
}

// Target is one Server member of one channel.
type Target struct {
	RID    string
	Weight uint16
	Local  bool
}

// View is an immutable snapshot of a Table. It is safe to share between
// goroutines; nothing it returns aliases its internals.
type View struct {
	members  map[string]Member   // never mutated after publication
	channels map[string][]Target // sorted by RID; never mutated after publication
}

var emptyView = &View{members: map[string]Member{}, channels: map[string][]Target{}}

// Servers returns the Server members of channel, sorted by RID, with their
// weights (weight 0 included: the filter is the caller's).
func (v *View) Servers(channel string) []Target {
	return slices.Clone(v.channels[channel])
}

// Member returns the membership of rid.
func (v *View) Member(rid string) (Member, bool) {
	m, ok := v.members[rid]
	if !ok {
		return Member{}, false
	}
	return m.clone(), true
}

// Knows reports whether the view holds rid's generation gen at revision
// rev or later, without copying the member (Member copies its channels).
func (v *View) Knows(rid string, gen, rev uint64) bool {
	m, ok := v.members[rid]
	return ok && m.Generation == gen && m.Revision >= rev
}

// Members returns every member, sorted by RID.
func (v *View) Members() []Member {
	out := make([]Member, 0, len(v.members))
	for _, rid := range slices.Sorted(maps.Keys(v.members)) {
		out = append(out, v.members[rid].clone())
	}
	return out
}

// Table is the channel target table of one MeshNode. It is written by one
// owner (the MeshNode actor) through Apply and Remove; Snapshot may be
// called by any goroutine at any time and never blocks. Each change
// publishes a new immutable View (copy on write, compare-and-swap), so a
// concurrent writer would retry rather than lose an update, but one writer
// is the intended use.
type Table struct {
	view atomic.Pointer[View]
}

// NewTable returns an empty table.
func NewTable() *Table {
	t := &Table{}
	t.view.Store(emptyView)
	return t
}

// Snapshot returns the current immutable view.
func (t *Table) Snapshot() *View { return t.view.Load() }

// Apply installs m: a new RID or a different generation replaces what the
// table held; within the same generation only a larger revision applies.
// It reports whether the table changed. The caller applies only lifecycles
// that admission accepted (a generation carries no order). It panics with
// an error wrapping ErrInvalidMember when m fails Validate.
func (t *Table) Apply(m Member) bool {
	if err := m.Validate(); err != nil {
		panic(err)
	}
	m = m.clone()
	for {
		old := t.view.Load()
		prev, had := old.members[m.RID]
		if had && prev.Generation == m.Generation && m.Revision <= prev.Revision {
			return false
		}
		if t.view.CompareAndSwap(old, rebuild(old, prev, had, &m)) {
			return true
		}
	}
}

// Remove deletes rid if the table holds its generation gen; a removal for
// any other generation (a late event) changes nothing. It reports whether
// the table changed.
func (t *Table) Remove(rid string, gen uint64) bool {
	for {
		old := t.view.Load()
		prev, had := old.members[rid]
		if !had || prev.Generation != gen {
			return false
		}
		if t.view.CompareAndSwap(old, rebuild(old, prev, true, nil)) {
			return true
		}
	}
}

// rebuild returns a new view made from old with prev (if had) replaced
// by next (nil = removed). Only the channels that prev or next serve are
// rebuilt; the others share old's immutable slices.
func rebuild(old *View, prev Member, had bool, next *Member) *View {
	rid := prev.RID
	if next != nil {
		rid = next.RID
	}
	members := maps.Clone(old.members)
	if next != nil {
		members[rid] = *next
	} else {
		delete(members, rid)
	}
	channels := maps.Clone(old.channels)
	touched := map[string]struct{}{}
	if had {
		for ch := range prev.Servers {
			touched[ch] = struct{}{}
		}
	}
	if next != nil {
		for ch := range next.Servers {
			touched[ch] = struct{}{}
		}
	}
	for ch := range touched {
		targets := make([]Target, 0, len(old.channels[ch])+1)
		for _, tg := range old.channels[ch] {
			if tg.RID != rid {
				targets = append(targets, tg)
			}
		}
		if next != nil {
			if w, ok := next.Servers[ch]; ok {
				targets = append(targets, Target{RID: rid, Weight: w, Local: next.Local})
			}
		}
		if len(targets) == 0 {
			delete(channels, ch)
			continue
		}
		slices.SortFunc(targets, func(a, b Target) int { return strings.Compare(a.RID, b.RID) })
		channels[ch] = targets
	}
	return &View{members: members, channels: channels}
}

// ServersShared is Servers without the copy, for the per-call hot path. The
// caller must not modify the returned slice.
func (v *View) ServersShared(channel string) []Target { return v.channels[channel] }
