package location

// The in-memory store's Spot reminders and their due-time index.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// remKey names a Spot's reminders in Memory.
type remPartKey struct {
	mesh, kind string
	part       int
}

// memReminders is Memory's reminder data.
type memReminders struct {
	recs  map[spotKey]map[string]Reminder
	index map[remPartKey]map[string]int64 // member → due ms
	seq   uint64
}

// remFenceLocked checks a fenced write's owner.
func (m *Memory) remFenceLocked(spot Ownership) error {
	if spot.OwnerRID == "" {
		return nil
	}
	if cur := m.recordLocked(spot); cur != spot {
		return fenced(cur, spot)
	}
	return nil
}

func (m *Memory) remIndexLocked(mesh, kind, id string) map[string]int64 {
	if m.rems.index == nil {
		m.rems.index = map[remPartKey]map[string]int64{}
	}
	k := remPartKey{mesh, kind, ReminderPart(id)}
	if m.rems.index[k] == nil {
		m.rems.index[k] = map[string]int64{}
	}
	return m.rems.index[k]
}

// putReminder is SpotReminders.PutReminder behind validated.
func (m *Memory) putReminder(ctx context.Context, spot Ownership, r Reminder) (Reminder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.remFenceLocked(spot); err != nil {
		return Reminder{}, err
	}
	k := spotKey{spot.Mesh, spot.Kind, spot.ID}
	if m.rems.recs == nil {
		m.rems.recs = map[spotKey]map[string]Reminder{}
	}
	rs := m.rems.recs[k]
	old, had := rs[r.Name]
	if !had && len(rs) >= MaxSpotReminders {
		return Reminder{}, invalidf("spot %s/%s holds %d reminders already", spot.Kind, spot.ID, MaxSpotReminders)
	}
	if rs == nil {
		rs = map[string]Reminder{}
		m.rems.recs[k] = rs
	}
	m.rems.seq++
	r.Seq = m.rems.seq
	r.Due = time.UnixMilli(r.Due.UnixMilli())
	r.Payload = append([]byte(nil), r.Payload...)
	rs[r.Name] = r
	idx := m.remIndexLocked(spot.Mesh, spot.Kind, spot.ID)
	if had {
		delete(idx, reminderMember(old.Seq, spot.ID, r.Name))
	}
	idx[reminderMember(r.Seq, spot.ID, r.Name)] = r.Due.UnixMilli()
	out := r
	out.Payload = append([]byte(nil), r.Payload...)
	return out, nil
}

// deleteReminder is SpotReminders.DeleteReminder behind validated.
func (m *Memory) deleteReminder(ctx context.Context, spot Ownership, name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.remFenceLocked(spot); err != nil {
		return false, err
	}
	k := spotKey{spot.Mesh, spot.Kind, spot.ID}
	old, had := m.rems.recs[k][name]
	if !had {
		return false, nil
	}
	delete(m.rems.recs[k], name)
	if len(m.rems.recs[k]) == 0 {
		delete(m.rems.recs, k)
	}
	delete(m.remIndexLocked(spot.Mesh, spot.Kind, spot.ID), reminderMember(old.Seq, spot.ID, name))
	return true, nil
}

// listReminders is SpotReminders.ListReminders behind validated.
func (m *Memory) listReminders(ctx context.Context, mesh, kind, id string) ([]Reminder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.rems.recs[spotKey{mesh, kind, id}]
	out := make([]Reminder, 0, len(rs))
	for _, r := range rs {
		r.Payload = append([]byte(nil), r.Payload...)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reminder) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// getReminder is SpotReminders.GetReminder behind validated.
func (m *Memory) getReminder(ctx context.Context, mesh, kind, id, name string) (Reminder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rems.recs[spotKey{mesh, kind, id}][name]
	if !ok {
		return Reminder{}, fmt.Errorf("%w: reminder %s of spot %s/%s", ErrNotFound, name, kind, id)
	}
	r.Payload = append([]byte(nil), r.Payload...)
	return r, nil
}

// advanceReminder is SpotReminders.AdvanceReminder behind validated.
func (m *Memory) advanceReminder(ctx context.Context, o Ownership, name string, seq uint64, due, next time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.remFenceLocked(o); err != nil {
		return err
	}
	k := spotKey{o.Mesh, o.Kind, o.ID}
	r, ok := m.rems.recs[k][name]
	if !ok || r.Seq != seq || r.Due.UnixMilli() != due.UnixMilli() {
		return fmt.Errorf("%w: reminder %s of spot %s/%s (registration %d due %d)", ErrNotFound, name, o.Kind, o.ID, seq, due.UnixMilli())
	}
	idx := m.remIndexLocked(o.Mesh, o.Kind, o.ID)
	member := reminderMember(seq, o.ID, name)
	if next.IsZero() {
		delete(m.rems.recs[k], name)
		if len(m.rems.recs[k]) == 0 {
			delete(m.rems.recs, k)
		}
		delete(idx, member)
		return nil
	}
	r.Due = time.UnixMilli(next.UnixMilli())
	m.rems.recs[k][name] = r
	if cur, ok := idx[member]; !ok || cur < r.Due.UnixMilli() {
		idx[member] = r.Due.UnixMilli()
	}
	return nil
}

// dueReminders is SpotReminders.DueReminders behind validated: a walk of
// the part in memory (no store commands; its CPU grows with the part).
func (m *Memory) dueReminders(ctx context.Context, mesh, kind string, part, limit int, now time.Time) ([]DueReminder, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := m.rems.index[remPartKey{mesh, kind, part}]
	at := now.UnixMilli()
	var out []DueReminder
	for member, due := range idx {
		if due > at {
			continue
		}
		d, err := parseReminderMember(kind, member)
		if err != nil {
			continue
		}
		d.Due = time.UnixMilli(due)
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b DueReminder) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// fixReminderIndex is SpotReminders.FixReminderIndex behind validated.
func (m *Memory) fixReminderIndex(ctx context.Context, mesh string, e DueReminder, due time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := m.remIndexLocked(mesh, e.Kind, e.ID)
	member := reminderMember(e.Seq, e.ID, e.Name)
	if due.IsZero() {
		delete(idx, member)
		return nil
	}
	if cur, ok := idx[member]; ok && cur < due.UnixMilli() {
		idx[member] = due.UnixMilli()
	}
	return nil
}
