package spot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// MinReminderPeriod is the shortest period of a repeating reminder.
const MinReminderPeriod = time.Second

// minReminderPeriod is MinReminderPeriod, lowered by the package's own
// tests only.
var minReminderPeriod = MinReminderPeriod

// SourceReminder is the Context.Source of a reminder's firing.
const SourceReminder = "reminder"

// reminderPacket is the internal request a reminder's firing is delivered
// as: an ordinary Spot call to (kind, ID), which activates the Spot where
// needed. Kinds with an OnReminder handler answer it.
const reminderPacket = "zlink.reminder"

// Reminder is a durable timer of a Spot: data (a name, a due time, a
// period, a payload) kept in the Location Store under the Spot's own hash
// tag. It fires even when the Spot is not active (the firing activates
// it), at least once per due time, on the Spot's current owner only, in a
// turn that runs the kind's OnReminder handler; it outlives its owner's
// death, moves and a restart of every node. See docs/spots.md.
type Reminder struct {
	// Name names the reminder within its Spot (1..128 bytes, no NUL);
	// registering a name again replaces it.
	Name string
	// Due is when it fires (next). Registering with a zero Due means one
	// Period from now. Kept to the millisecond.
	Due time.Time
	// Period repeats it at a fixed rate (due, due+period, …; due times
	// missed while nobody could fire them are merged into one firing). 0:
	// it fires once and is removed. At least MinReminderPeriod.
	Period time.Duration
	// Payload is handed to every firing (at most 16 KiB).
	Payload []byte
}

// OnReminder sets the kind's reminder handler: each firing of one of a
// Spot's reminders is a turn of the Spot, serial with its messages, that
// runs h with r.Due the due time it fires for (Context.Source is
// SourceReminder). When h returns nil the firing is done: in the same
// turn, a write fenced by the Spot's ownership record moves the reminder
// to its next due time (or removes a one-shot). When h returns an error
// nothing moves and the reminder fires again at the next index scan (about
// a second later). Only kinds with a handler can hold reminders, and only
// their due-time index is scanned.
func (k *Kind[S]) OnReminder(h func(c *Context, s *S, r Reminder) error) *Kind[S] {
	if h == nil {
		k.refuse("kind %s: nil OnReminder", k.reg.name)
		return k
	}
	if !k.checkPacket(reminderPacket, false) {
		return k
	}
	k.reg.onReminder = func(c *Context, state any, r Reminder) error { return h(c, state.(*S), r) }
	k.reg.requests[reminderPacket] = func(c *Context, state any, payload []byte) ([]byte, error) {
		return c.rt.fireReminder(c, state, payload)
	}
	return k
}

// remMark is the last due time a reminder fired for in an activation.
type remMark struct {
	seq uint64
	due int64 // ms
}

// checkReminder validates r for registration (due filled in from now).
func checkReminder(r *Reminder, now time.Time) error {
	switch {
	case r.Name == "" || len(r.Name) > location.MaxReminderName:
		return fmt.Errorf("%w: reminder name %.64q", ErrConfig, r.Name)
	case r.Period < 0 || (r.Period > 0 && r.Period < minReminderPeriod):
		return fmt.Errorf("%w: reminder %s: period %v (0 or at least %v)", ErrConfig, r.Name, r.Period, minReminderPeriod)
	case r.Period == 0 && r.Due.IsZero():
		return fmt.Errorf("%w: reminder %s: neither a due time nor a period", ErrConfig, r.Name)
	case len(r.Payload) > location.MaxReminderPayload:
		return fmt.Errorf("%w: reminder %s: payload of %d bytes, over %d", ErrConfig, r.Name, len(r.Payload), location.MaxReminderPayload)
	}
	if r.Due.IsZero() {
		r.Due = now.Add(r.Period)
	}
	return nil
}

// reminders returns the runtime's reminder store, or ErrConfig.
func (rt *runtime) reminders(kind string) (location.SpotReminders, error) {
	if rt.rems == nil {
		return nil, fmt.Errorf("%w: the Location Store %T keeps no reminders", ErrConfig, rt.store)
	}
	if kind == "" || len(kind) > maxName {
		return nil, fmt.Errorf("%w: spot kind %.64q", ErrConfig, kind)
	}
	return rt.rems, nil
}

// ownership is the record act was claimed as.
func (rt *runtime) ownership(kind string, act *activation) location.Ownership {
	return location.Ownership{Mesh: rt.n.Mesh(), Kind: kind, ID: act.id, OwnerRID: rt.n.RID(), OwnerGeneration: act.gen, Epoch: act.epoch}
}

// RegisterReminder registers (or replaces) a reminder of the Spot whose
// turn c is, with a write fenced by its ownership record (ErrFenced when
// this activation is not the owner any more). ErrConfig for a bad
// reminder or a kind without OnReminder.
func (c *Context) RegisterReminder(r Reminder) error {
	if c == nil || c.act == nil {
		return fmt.Errorf("%w: a reminder needs a Spot turn's Context", ErrConfig)
	}
	if c.ks.reg.onReminder == nil {
		return fmt.Errorf("%w: kind %s has no OnReminder handler", ErrConfig, c.Kind)
	}
	if err := checkReminder(&r, time.Now()); err != nil {
		return err
	}
	rems, err := c.rt.reminders(c.Kind)
	if err != nil {
		return err
	}
	if !c.rt.valid(c.act, time.Now()) {
		return fmt.Errorf("%w: %s/%s lost its lease", ErrFenced, c.Kind, c.ID)
	}
	ctx, cancel := c.rt.storeCtx()
	defer cancel()
	_, err = rems.PutReminder(ctx, c.rt.ownership(c.Kind, c.act), location.Reminder{Name: r.Name, Due: r.Due, Period: r.Period, Payload: r.Payload})
	return reminderErr(err)
}

// CancelReminder removes reminder name of the Spot whose turn c is
// (fenced like RegisterReminder); false when it had none. A firing
// already running finishes; none starts after.
func (c *Context) CancelReminder(name string) (bool, error) {
	if c == nil || c.act == nil {
		return false, fmt.Errorf("%w: a reminder needs a Spot turn's Context", ErrConfig)
	}
	rems, err := c.rt.reminders(c.Kind)
	if err != nil {
		return false, err
	}
	if !c.rt.valid(c.act, time.Now()) {
		return false, fmt.Errorf("%w: %s/%s lost its lease", ErrFenced, c.Kind, c.ID)
	}
	ctx, cancel := c.rt.storeCtx()
	defer cancel()
	ok, err := rems.DeleteReminder(ctx, c.rt.ownership(c.Kind, c.act), name)
	return ok, reminderErr(err)
}

// Reminders lists the reminders of the Spot whose turn c is, by name,
// each with its next due time.
func (c *Context) Reminders() ([]Reminder, error) {
	if c == nil || c.act == nil {
		return nil, fmt.Errorf("%w: a reminder needs a Spot turn's Context", ErrConfig)
	}
	return listReminders(c, c.rt, c.Kind, c.ID)
}

// RegisterReminder registers (or replaces) a reminder of the Spot (kind,
// id) from outside its turns (an operator, a tool): the write is not
// fenced and the Spot is not activated. Node n needs the Spot runtime; it
// need not host the kind (ErrConfig when it hosts it without an
// OnReminder handler; on other nodes nothing checks that the kind's
// servers have one: without one the reminder never fires).
func RegisterReminder(ctx context.Context, n *routemesh.Node, kind, id string, r Reminder) error {
	rt, err := of(n)
	if err != nil {
		return err
	}
	if err := checkReminder(&r, time.Now()); err != nil {
		return err
	}
	if id == "" || len(id) > maxName {
		return fmt.Errorf("%w: spot id %.64q (1..%d bytes)", ErrConfig, id, maxName)
	}
	if ks := rt.kinds[kind]; ks != nil && ks.reg.onReminder == nil {
		return fmt.Errorf("%w: kind %s has no OnReminder handler", ErrConfig, kind)
	}
	rems, err := rt.reminders(kind)
	if err != nil {
		return err
	}
	sp := location.Ownership{Mesh: rt.n.Mesh(), Kind: kind, ID: id}
	_, err = rems.PutReminder(ctx, sp, location.Reminder{Name: r.Name, Due: r.Due, Period: r.Period, Payload: r.Payload})
	return reminderErr(err)
}

// CancelReminder removes reminder name of the Spot (kind, id) from
// outside its turns; false when it had none.
func CancelReminder(ctx context.Context, n *routemesh.Node, kind, id, name string) (bool, error) {
	rt, err := of(n)
	if err != nil {
		return false, err
	}
	rems, err := rt.reminders(kind)
	if err != nil {
		return false, err
	}
	ok, err := rems.DeleteReminder(ctx, location.Ownership{Mesh: rt.n.Mesh(), Kind: kind, ID: id}, name)
	return ok, reminderErr(err)
}

// Reminders lists the reminders of the Spot (kind, id) by name, each with
// its next due time.
func Reminders(ctx context.Context, n *routemesh.Node, kind, id string) ([]Reminder, error) {
	rt, err := of(n)
	if err != nil {
		return nil, err
	}
	return listReminders(ctx, rt, kind, id)
}

func listReminders(ctx context.Context, rt *runtime, kind, id string) ([]Reminder, error) {
	rems, err := rt.reminders(kind)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, rt.cfg.StoreTimeout)
	defer cancel()
	list, err := rems.ListReminders(ctx, rt.n.Mesh(), kind, id)
	if err != nil {
		return nil, reminderErr(err)
	}
	out := make([]Reminder, 0, len(list))
	for _, r := range list {
		out = append(out, Reminder{Name: r.Name, Due: r.Due, Period: r.Period, Payload: r.Payload})
	}
	return out, nil
}

// reminderErr maps the store's refusals to the package's errors.
func reminderErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, location.ErrFenced):
		return fmt.Errorf("%w: %w", ErrFenced, err)
	case errors.Is(err, location.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return err
}

// reminderCall is what a scan delivers: the index entry.
func encodeReminderCall(e location.DueReminder) []byte {
	b := appendString(nil, e.Name)
	b = binary.AppendUvarint(b, e.Seq)
	return binary.AppendUvarint(b, uint64(max(e.Due.UnixMilli(), 0)))
}

func decodeReminderCall(kind, id string, b []byte) (location.DueReminder, error) {
	r := reader{b: b}
	name := r.string(location.MaxReminderName)
	seq := r.uvarint()
	due := r.uvarint()
	if r.err != nil || name == "" || due > 1<<50 {
		return location.DueReminder{}, fmt.Errorf("%w: reminder call", errMalformed)
	}
	return location.DueReminder{Kind: kind, ID: id, Name: name, Seq: seq, Due: time.UnixMilli(int64(due))}, nil
}

// Answers of a firing turn (the scanner counts them).
const (
	remFired   = "fired"
	remAgain   = "again" // fired in this epoch already; the advance is done now
	remLater   = "later" // not due (any more): the index entry was fixed
	remGone    = "gone"  // cancelled or replaced: the index entry was removed
	remChanged = "changed"
)

// fireReminder is a reminder's firing, run as a turn of its Spot (the
// owner's: runTurn checked the lease). It reads the record — the index
// said it is due, the record decides — runs the handler unless this
// activation fired that due time already, and moves the record on with a
// write fenced by the ownership record.
func (rt *runtime) fireReminder(c *Context, state any, payload []byte) ([]byte, error) {
	act, reg := c.act, c.ks.reg
	e, err := decodeReminderCall(c.Kind, c.ID, payload)
	if err != nil {
		return nil, err
	}
	rems, err := rt.reminders(c.Kind)
	if err != nil {
		return nil, err
	}
	ctx, cancel := rt.storeCtx()
	rec, err := rems.GetReminder(ctx, rt.n.Mesh(), c.Kind, c.ID, e.Name)
	cancel()
	found := err == nil
	if err != nil && !errors.Is(err, location.ErrNotFound) {
		return nil, fmt.Errorf("%w: reading reminder %s: %w", zerr.ErrBusy, e.Name, err)
	}
	mark, fired := act.remFired[e.Name]
	answer := remFired
	switch decideFiring(e, rec, found, mark, fired, time.Now()) {
	case remDrop:
		rt.fixIndex(rems, e, time.Time{})
		return []byte(remGone), nil
	case remLate:
		rt.fixIndex(rems, e, rec.Due)
		return []byte(remLater), nil
	case remWrite:
		answer = remAgain // the handler ran for this due time in this epoch: only the write is left
	case remRun:
		mark := remMark{seq: rec.Seq, due: rec.Due.UnixMilli()}
		if act.remFired == nil {
			act.remFired = map[string]remMark{}
		}
		act.remFired[e.Name] = mark // before the handler: a panic counts as fired
		rc := *c
		rc.Source, rc.From, rc.req = SourceReminder, "", nil
		if err := reg.onReminder(&rc, state, Reminder{Name: rec.Name, Due: rec.Due, Period: rec.Period, Payload: rec.Payload}); err != nil {
			delete(act.remFired, e.Name) // the handler asks for another try
			rt.stats.remErrors.Add(1)
			return nil, fmt.Errorf("%w: reminder %s: %w", zerr.ErrHandler, e.Name, err)
		}
		rt.stats.remFired.Add(1)
	}
	next, merged := nextDue(rec, time.Now())
	rt.stats.remMerged.Add(merged)
	ctx, cancel = rt.storeCtx()
	err = rems.AdvanceReminder(ctx, rt.ownership(c.Kind, act), e.Name, rec.Seq, rec.Due, next)
	cancel()
	switch {
	case err == nil:
		delete(act.remFired, e.Name)
		return []byte(answer), nil
	case errors.Is(err, location.ErrNotFound):
		// Cancelled or replaced while the handler ran: nothing to move.
		delete(act.remFired, e.Name)
		return []byte(remChanged), nil
	case errors.Is(err, location.ErrFenced):
		rt.stats.overlaps.Add(1)
		rt.log.Error().Str("kind", c.Kind).Str("id", c.ID).Uint64("epoch", act.epoch).
			Msg("spots: a reminder write was refused: the record moved on under this activation; fencing it")
		act.fenced.Store(true)
		if ref := c.ks.ref.Load(); ref != nil {
			_ = ref.TellControl(&staleSpot{act: act})
		}
		return nil, fmt.Errorf("%w: %s/%s: %w", ErrFenced, c.Kind, c.ID, err)
	}
	// Unknown outcome: the next scan delivers it again; this activation
	// does not run the handler for it again.
	return nil, fmt.Errorf("%w: moving reminder %s on: %w", zerr.ErrBusy, e.Name, err)
}

// What a firing turn does with a delivered index entry (decideFiring).
const (
	remDrop  = 1 + iota // the reminder is gone, or the entry is of another registration: remove the entry
	remLate             // due later than now: move the entry to the record's due time
	remRun              // due: run the handler, then the fenced write
	remWrite            // due, and this activation ran the handler for it already: only the write
)

// decideFiring is the firing's decision, from the index entry e, the
// record rec (found: it exists), the mark this activation keeps for the
// reminder (marked: it has one) and now. The record decides, never the
// entry.
func decideFiring(e location.DueReminder, rec location.Reminder, found bool, mark remMark, marked bool, now time.Time) int {
	switch {
	case !found || rec.Seq != e.Seq:
		return remDrop
	case rec.Due.After(now):
		return remLate
	case marked && mark == (remMark{seq: rec.Seq, due: rec.Due.UnixMilli()}):
		return remWrite
	}
	return remRun
}

// fixIndex reconciles an index entry with its record (best effort: a
// failure leaves the entry, read and fixed again later).
func (rt *runtime) fixIndex(rems location.SpotReminders, e location.DueReminder, due time.Time) {
	ctx, cancel := rt.storeCtx()
	defer cancel()
	if err := rems.FixReminderIndex(ctx, rt.n.Mesh(), e, due); err != nil {
		rt.log.Debug().Err(err).Str("kind", e.Kind).Str("id", e.ID).Str("reminder", e.Name).Msg("spots: reminder index not fixed")
	}
}

// nextDue is the first due time of rec's fixed-rate schedule after now
// (zero for a one-shot), and how many due times it skipped.
func nextDue(rec location.Reminder, now time.Time) (time.Time, uint64) {
	if rec.Period <= 0 {
		return time.Time{}, 0
	}
	next := rec.Due.Add(rec.Period)
	if !next.After(now) {
		k := now.Sub(rec.Due)/rec.Period + 1
		next = rec.Due.Add(k * rec.Period)
		return next, uint64(k - 1)
	}
	return next, 0
}
