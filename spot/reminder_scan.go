package spot

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/location"
)

// Scanning the reminder index: each part of a kind's due-time index is
// read, every Config.ReminderScan, by exactly one Object Server — the one
// placement (rendezvous hashing over the servers that host the kind,
// ready, not draining) picks for the part, as it would pick an owner for a
// Spot. Servers that disagree for a moment (a membership change) both
// read the part: a due reminder is then delivered twice and its owner's
// turns, one at a time, fire it once. A due entry is delivered as an
// ordinary call to (kind, ID), which activates the Spot where needed; the
// owner's turn decides (fireReminder). One read per part per scan, and
// one call per due reminder: the cost does not grow with the reminders
// that are not due.
const (
	// remScanLimit bounds the entries one read of a part takes; a part
	// that gave that many is read again at the next tick.
	remScanLimit = 256
	// remWindow bounds the deliveries of one part in flight.
	remWindow = 64
	// remCallTimeout bounds one delivery (it may claim and activate).
	remCallTimeout = 10 * time.Second
)

// remPart is one index part as the reminders actor tracks it.
type remPart struct {
	kind string
	part int
	next time.Time // its next read (zero: at the next tick)
	busy bool      // a read and its deliveries are in flight
}

// reminderActor reads the index parts this node is in charge of and
// delivers what is due. It has a clock of its own, a quarter of the scan
// interval (at most 250 ms), so the lateness bound is about the interval.
type reminderActor struct {
	rt    *runtime
	parts []*remPart
	stop  chan struct{}
}

type remScanDone struct {
	p    *remPart
	full bool
}

// remindedKinds reports whether any hosted kind has reminders.
func (rt *runtime) remindedKinds() bool {
	for _, ks := range rt.order {
		if ks.reg.onReminder != nil {
			return true
		}
	}
	return false
}

func (rt *runtime) reminderSpec() actors.Spec {
	return actors.Spec{Name: "reminders", Kind: "reminders", MaxMessages: ownMailbox,
		Producer: func() actors.Actor { return &reminderActor{rt: rt} }}
}

func (a *reminderActor) Receive(c *actors.Context) {
	rt := a.rt
	switch msg := c.Message().(type) {
	case *actors.Started:
		a.parts = a.parts[:0]
		for _, ks := range rt.order {
			if ks.reg.onReminder == nil {
				continue
			}
			for p := range location.ReminderParts {
				a.parts = append(a.parts, &remPart{kind: ks.reg.name, part: p})
			}
		}
		rt.remRef.Store(c.Self())
		a.stop = make(chan struct{})
		every := max(min(rt.cfg.ReminderScan/4, 250*time.Millisecond), 5*time.Millisecond)
		go clock(a.stop, every, []*actors.Ref{c.Self()})
	case *actors.Stopping, *actors.Restarting:
		if a.stop != nil {
			close(a.stop)
			a.stop = nil
		}
	case *tick:
		a.tick(msg.at)
	case *remScanDone:
		msg.p.busy = false
		if msg.full {
			msg.p.next = time.Time{}
		}
	}
}

func (a *reminderActor) tick(now time.Time) {
	rt := a.rt
	if rt.stopping.Load() || rt.rems == nil {
		return
	}
	self := rt.n.RID()
	for _, p := range a.parts {
		if p.busy || now.Before(p.next) {
			continue
		}
		p.next = now.Add(rt.cfg.ReminderScan)
		if rid, ok := rt.place(p.kind, remPartKey(p.part)); !ok || rid != self {
			continue
		}
		p.busy = rt.goStore(func() {
			full := rt.scanPart(p.kind, p.part)
			if me := rt.remRef.Load(); me != nil {
				_ = me.TellControl(&remScanDone{p: p, full: full})
			}
		})
	}
}

// remPartKey is the name placement ranks servers by for an index part.
func remPartKey(part int) string { return "\x00reminders:" + strconv.Itoa(part) }

// scanPart reads one index part and delivers its due entries, at most
// remWindow at a time; it reports whether the read was full.
func (rt *runtime) scanPart(kind string, part int) bool {
	ctx, cancel := rt.storeCtx()
	due, err := rt.rems.DueReminders(ctx, rt.n.Mesh(), kind, part, remScanLimit, time.Now())
	cancel()
	rt.stats.remScans.Add(1)
	if err != nil {
		rt.log.Debug().Err(err).Str("kind", kind).Int("part", part).Msg("spots: reminder index not read")
		return false
	}
	sem := make(chan struct{}, remWindow)
	var wg sync.WaitGroup
deliver:
	for _, e := range due {
		select {
		case sem <- struct{}{}:
		case <-rt.base.Done():
			break deliver
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(rt.base, remCallTimeout)
			defer cancel()
			rt.stats.remDelivered.Add(1)
			if _, _, err := rt.call(ctx, kind, e.ID, reminderPacket, encodeReminderCall(e)); err != nil {
				rt.stats.remFailed.Add(1)
				rt.log.Debug().Err(err).Str("kind", kind).Str("id", e.ID).Str("reminder", e.Name).Msg("spots: reminder delivery failed; delivered again at a later scan")
			}
		}()
	}
	wg.Wait()
	return len(due) == remScanLimit
}
