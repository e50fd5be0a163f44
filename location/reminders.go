package location

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reminder is one durable reminder of a Spot as the store holds it: data
// (a name, the next due time, a period, a payload), never code. The Spot
// runtime fires it; the store only keeps it and its place in the due-time
// index.
type Reminder struct {
	// Name names it within its Spot (1..MaxReminderName bytes, no NUL).
	Name string
	// Due is the next due time (kept to the millisecond).
	Due time.Time
	// Period repeats it (0: it fires once and is then removed).
	Period time.Duration
	// Payload is handed to every firing (at most MaxReminderPayload bytes).
	Payload []byte
	// Seq is the registration: the store gives every put a new one, so a
	// firing or an index entry of a replaced registration is told apart
	// from the current one.
	Seq uint64
}

// DueReminder is one entry of the due-time index: a reminder that was due
// when the index was read (the record may say otherwise by now: the
// firing reads the record).
type DueReminder struct {
	Kind, ID, Name string
	Seq            uint64
	Due            time.Time
}

// Limits of reminders.
const (
	// MaxSpotReminders bounds the reminders of one Spot.
	MaxSpotReminders = 64
	// MaxReminderPayload bounds a reminder's payload.
	MaxReminderPayload = 16 << 10
	// MaxReminderName bounds a reminder's name.
	MaxReminderName = 128
	// ReminderParts is how many parts the due-time index of one Spot kind
	// is split into, each under a key (and a Cluster slot) of its own. A
	// Spot's reminders go to part ReminderPart(id). Every node of a mesh
	// must agree on it, hence a constant.
	ReminderParts = 8
)

// ReminderPart is the index part of the Spot id's reminders: FNV-1a of
// the id, modulo ReminderParts.
func ReminderPart(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % ReminderParts)
}

// SpotReminders is the reminder store of Spots, implemented by Redis and
// Memory (the Spot runtime asserts it on the node's Store). A Spot's
// reminder records live under the Spot's own hash tag, beside its
// ownership record, so a fenced write compares the record and changes a
// reminder in one atomic step. The due-time index of a kind is split into
// ReminderParts parts under keys of their own ({rem:<mesh>:<kind>:<p>}):
// every write changes the record first, then the index, so the index may
// lag behind the records (an entry of a reminder that is gone or due
// later, never the other way round for long); its reader reconciles an
// entry against the record (FixReminderIndex).
//
// spot names the Spot (Mesh, Kind, ID). When spot.OwnerRID is set, a
// write is fenced: it happens only if the ownership record still equals
// spot (owner, generation, epoch), else ErrFenced (a stale owner never
// writes). Without an owner the write is not fenced (an operator's).
type SpotReminders interface {
	// PutReminder registers r (replacing a reminder of the same name) with
	// a new Seq, and returns it as stored. ErrInvalid for a bad reminder
	// or a Spot that holds MaxSpotReminders others already.
	PutReminder(ctx context.Context, spot Ownership, r Reminder) (Reminder, error)
	// DeleteReminder removes reminder name; false when there was none.
	DeleteReminder(ctx context.Context, spot Ownership, name string) (bool, error)
	// ListReminders returns the Spot's reminders sorted by name.
	ListReminders(ctx context.Context, mesh, kind, id string) ([]Reminder, error)
	// GetReminder returns one reminder, or ErrNotFound.
	GetReminder(ctx context.Context, mesh, kind, id, name string) (Reminder, error)
	// AdvanceReminder is a firing's write, always fenced on o (which must
	// name an owner): if reminder name still has registration seq and due
	// time due, its due time becomes next (zero next: it is removed, a
	// one-shot reminder), then the index follows. ErrFenced when o is not
	// the owner any more; ErrNotFound when the reminder is gone or changed
	// (cancelled, replaced, or advanced already).
	AdvanceReminder(ctx context.Context, o Ownership, name string, seq uint64, due, next time.Time) error
	// DueReminders reads at most limit entries of index part of kind due
	// at now, earliest first: one read, whatever the number of reminders
	// not due.
	DueReminders(ctx context.Context, mesh, kind string, part, limit int, now time.Time) ([]DueReminder, error)
	// FixReminderIndex reconciles index entry e with what its record says:
	// with a zero due the entry is removed; else an entry still there moves
	// to due, only ever later (an entry names one registration, whose due
	// time only grows); a missing one is not added back.
	FixReminderIndex(ctx context.Context, mesh string, e DueReminder, due time.Time) error
}

func validReminder(spot Ownership, r Reminder) error {
	if err := validReminderSpot(spot); err != nil {
		return err
	}
	if err := validReminderName(r.Name); err != nil {
		return err
	}
	switch {
	case r.Due.IsZero() || r.Due.UnixMilli() <= 0:
		return invalidf("reminder %s: no due time", r.Name)
	case r.Period < 0 || (r.Period > 0 && r.Period < time.Millisecond):
		return invalidf("reminder %s: period %v", r.Name, r.Period)
	case len(r.Payload) > MaxReminderPayload:
		return invalidf("reminder %s: payload of %d bytes, more than %d", r.Name, len(r.Payload), MaxReminderPayload)
	}
	return nil
}

func validReminderSpot(spot Ownership) error {
	if spot.OwnerRID != "" || spot.OwnerGeneration != 0 || spot.Epoch != 0 {
		return spot.validateOwner()
	}
	return spot.validateSpot()
}

func validReminderName(name string) error {
	if name == "" || len(name) > MaxReminderName || strings.ContainsRune(name, 0) {
		return invalidf("reminder name %.64q", name)
	}
	return nil
}

// reminderMember is the index member of a registration: seq, the id's
// length, the id, the name.
func reminderMember(seq uint64, id, name string) string {
	return u64(seq) + ":" + strconv.Itoa(len(id)) + ":" + id + name
}

// parseReminderMember reads what reminderMember wrote.
func parseReminderMember(kind, m string) (DueReminder, error) {
	s, rest, ok := strings.Cut(m, ":")
	if !ok {
		return DueReminder{}, fmt.Errorf("index member %.64q", m)
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return DueReminder{}, fmt.Errorf("index member %.64q", m)
	}
	l, rest, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(l)
	if !ok || err != nil || n <= 0 || n >= len(rest) {
		return DueReminder{}, fmt.Errorf("index member %.64q", m)
	}
	return DueReminder{Kind: kind, ID: rest[:n], Name: rest[n:], Seq: seq}, nil
}

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

// PutReminder implements SpotReminders.
func (m *Memory) PutReminder(ctx context.Context, spot Ownership, r Reminder) (Reminder, error) {
	if err := validReminder(spot, r); err != nil {
		return Reminder{}, err
	}
	if err := m.lock(ctx); err != nil {
		return Reminder{}, err
	}
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

// DeleteReminder implements SpotReminders.
func (m *Memory) DeleteReminder(ctx context.Context, spot Ownership, name string) (bool, error) {
	if err := validReminderSpot(spot); err != nil {
		return false, err
	}
	if err := validReminderName(name); err != nil {
		return false, err
	}
	if err := m.lock(ctx); err != nil {
		return false, err
	}
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

// ListReminders implements SpotReminders.
func (m *Memory) ListReminders(ctx context.Context, mesh, kind, id string) ([]Reminder, error) {
	if err := (Ownership{Mesh: mesh, Kind: kind, ID: id}).validateSpot(); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
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

// GetReminder implements SpotReminders.
func (m *Memory) GetReminder(ctx context.Context, mesh, kind, id, name string) (Reminder, error) {
	if err := (Ownership{Mesh: mesh, Kind: kind, ID: id}).validateSpot(); err != nil {
		return Reminder{}, err
	}
	if err := validReminderName(name); err != nil {
		return Reminder{}, err
	}
	if err := m.lock(ctx); err != nil {
		return Reminder{}, err
	}
	defer m.mu.Unlock()
	r, ok := m.rems.recs[spotKey{mesh, kind, id}][name]
	if !ok {
		return Reminder{}, fmt.Errorf("%w: reminder %s of spot %s/%s", ErrNotFound, name, kind, id)
	}
	r.Payload = append([]byte(nil), r.Payload...)
	return r, nil
}

// AdvanceReminder implements SpotReminders.
func (m *Memory) AdvanceReminder(ctx context.Context, o Ownership, name string, seq uint64, due, next time.Time) error {
	if err := o.validateOwner(); err != nil {
		return err
	}
	if err := validReminderName(name); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
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

// DueReminders implements SpotReminders: a walk of the part in memory (no
// store commands; its CPU grows with the part).
func (m *Memory) DueReminders(ctx context.Context, mesh, kind string, part, limit int, now time.Time) ([]DueReminder, error) {
	if err := validDueRead(mesh, kind, part, limit); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
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

// FixReminderIndex implements SpotReminders.
func (m *Memory) FixReminderIndex(ctx context.Context, mesh string, e DueReminder, due time.Time) error {
	if err := (Ownership{Mesh: mesh, Kind: e.Kind, ID: e.ID}).validateSpot(); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
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

func validDueRead(mesh, kind string, part, limit int) error {
	if err := (Ownership{Mesh: mesh, Kind: kind, ID: "-"}).validateSpot(); err != nil {
		return err
	}
	if part < 0 || part >= ReminderParts || limit < 1 || limit > 10000 {
		return invalidf("reminder index part %d, limit %d", part, limit)
	}
	return nil
}
