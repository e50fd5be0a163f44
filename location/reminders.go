package location

import (
	"context"
	"fmt"
	"hash/fnv"
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

func validDueRead(mesh, kind string, part, limit int) error {
	if err := (Ownership{Mesh: mesh, Kind: kind, ID: "-"}).validateSpot(); err != nil {
		return err
	}
	if part < 0 || part >= ReminderParts || limit < 1 || limit > 10000 {
		return invalidf("reminder index part %d, limit %d", part, limit)
	}
	return nil
}
