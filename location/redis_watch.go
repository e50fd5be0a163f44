package location

// Watch on the Redis Location Store: SUBSCRIBE for the pushes, a revision
// read every PollInterval for the lost ones, and a share of the sweep for
// lapsed leases.

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// watch is Store.Watch behind validated. It reads the mesh once (its
// revision and RIDs), SUBSCRIBEs to the mesh's event channel and then,
// every PollInterval, reads the mesh revision — or takes the one another
// caller of this store read within the interval (DescriptorRevision,
// DescriptorChanges) — and reads what changed when that is more than the
// pushes said, and after every resubscribe. Each watch sweeps lapsed leases
// (ExpireDescriptors) every PollInterval × live descriptors on average
// (randomised), so that the watches of a mesh sweep it about once per
// PollInterval in all. It fails when the first read fails.
func (r *Redis) watch(ctx context.Context, mesh string) (<-chan Event, error) {
	base, err := r.changes(ctx, mesh, MeshRevision{}, true)
	if err != nil {
		return nil, err
	}
	st := &watchState{rev: base.Revision, at: time.Now(), known: snapshot(base.Put)}
	w := newWatcher(mesh)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.ctx, cancel)
	subscribed := make(chan struct{}, 1) // a (re)subscription was confirmed
	hookCtx := rueidis.WithOnSubscriptionHook(wctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" {
			select {
			case subscribed <- struct{}{}:
			default:
			}
		}
	})
	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		stop()
		cancel()
		return nil, ErrClosed
	}
	r.wg.Add(3)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		w.forward(wctx)
	}()
	go func() { // subscriber: push hints
		defer r.wg.Done()
		r.subscribe(hookCtx, wctx, mesh, w, st)
	}()
	// Wait for the first subscription so a write right after Watch returns
	// is pushed; polling covers the case where Redis is slow to confirm.
	first := time.NewTimer(r.cfg.DialTimeout)
	select {
	case <-subscribed:
	case <-first.C:
	case <-wctx.Done():
	}
	first.Stop()
	go func() { // poller: lost pushes and expiry
		defer r.wg.Done()
		defer stop()
		defer cancel()
		t := time.NewTicker(r.cfg.PollInterval)
		defer t.Stop()
		sweep := time.Now().Add(r.sweepGap(len(base.Put)))
		for {
			resub := false
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			case <-subscribed: // resubscribed after a reconnect: pushes may be lost
				resub = true
			}
			r.poll(wctx, mesh, w, st, resub)
			if now := time.Now(); !now.Before(sweep) {
				removed, live, err := r.ExpireDescriptors(wctx, mesh)
				switch {
				case err != nil:
					sweep = now.Add(r.cfg.PollInterval)
				case removed >= expireBatch: // more may have lapsed
					sweep = now
				default:
					sweep = now.Add(r.sweepGap(live))
				}
			}
		}
	}()
	return w.out, nil
}

// sweepGap is the time to a watch's next sweep in a mesh of live
// descriptors: PollInterval × live on average, uniformly spread.
func (r *Redis) sweepGap(live int) time.Duration {
	mean := float64(r.cfg.PollInterval) * float64(max(live, 1))
	return time.Duration(mean * (0.5 + rand.Float64()))
}

// poll reads the mesh revision (or takes one read lately by another
// caller) and, when it is not where the pushes brought the watch (or
// always, after a resubscribe), reads what changed and notifies it.
func (r *Redis) poll(ctx context.Context, mesh string, w *watcher, st *watchState, force bool) {
	if !force {
		seen, ok := r.seen.since(mesh, r.cfg.PollInterval)
		if !ok {
			rev, err := r.revision(ctx, mesh)
			if err != nil {
				return // Redis unreachable: try again next tick
			}
			seen = seenRevision{rev: rev, at: time.Now()}
		}
		if !st.behind(seen) {
			return
		}
	}
	ch, err := r.changes(ctx, mesh, st.revision(), false)
	if err != nil {
		st.lost() // read again next tick
		return
	}
	st.apply(w, ch)
}

func (r *Redis) subscribe(hookCtx, ctx context.Context, mesh string, w *watcher, st *watchState) {
	ch := r.eventsChannel(mesh)
	for ctx.Err() == nil {
		_ = r.client.Receive(hookCtx, r.client.B().Subscribe().Channel(ch).Build(), func(msg rueidis.PubSubMessage) {
			kind, rid, rev, ok := parseEvent(msg.Message)
			if ok {
				w.notify(kind, rid)
			}
			st.pushed(kind, rid, rev, ok)
		})
		// Receive ended (connection lost and retries exhausted, or
		// unsubscribed): back off one poll interval, then resubscribe.
		t := time.NewTimer(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// watchState is where a Redis watch stands: the revision up to which it
// has notified every change, and the RIDs live as of then (to tell a full
// re-read's differences). Written by the subscriber and the poller.
type watchState struct {
	mu    sync.Mutex // leaf: guards everything below
	rev   MeshRevision
	at    time.Time // when rev was last set by a read
	gap   bool      // a push was lost or unreadable: read what changed
	known map[string]revKey
}

func (s *watchState) revision() MeshRevision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// pushed follows a push: the next revision of the same epoch moves the
// watch on; anything else makes the next poll read what changed.
func (s *watchState) pushed(kind EventKind, rid string, rev MeshRevision, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !ok || rev.Epoch != s.rev.Epoch || rev.Seq > s.rev.Seq+1:
		s.gap = true
	case rev.Seq == s.rev.Seq+1:
		s.rev = rev
		if kind == EventDelete {
			delete(s.known, rid)
		} else {
			s.known[rid] = revKey{} // changed: content unknown here
		}
	}
}

func (s *watchState) lost() {
	s.mu.Lock()
	s.gap = true
	s.mu.Unlock()
}

// behind reports whether a revision read shows changes the watch has not
// notified: a lost push, another epoch, or a store that went back.
func (s *watchState) behind(seen seenRevision) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gap || seen.rev.Epoch != s.rev.Epoch || seen.rev.Seq > s.rev.Seq ||
		(seen.rev.Seq < s.rev.Seq && seen.at.After(s.at))
}

// apply notifies what a read of the changes found and moves the watch to
// its revision.
func (s *watchState) apply(w *watcher, ch DescriptorChanges) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.Full {
		s.known = diffInto(w, s.known, ch.Put)
	} else {
		for _, d := range ch.Put {
			k := revKey{d.Generation, d.Revision}
			if old, ok := s.known[d.RID]; !ok || old != k {
				w.notify(EventPut, d.RID)
			}
			s.known[d.RID] = k
		}
		for _, rid := range ch.Gone {
			w.notify(EventDelete, rid)
			delete(s.known, rid)
		}
	}
	if ch.Revision.Epoch != s.rev.Epoch || ch.Revision.Seq >= s.rev.Seq || ch.Full {
		s.rev = ch.Revision
	}
	s.at, s.gap = time.Now(), false
}

type revKey struct{ gen, rev uint64 }

func snapshot(list []Descriptor) map[string]revKey {
	m := make(map[string]revKey, len(list))
	for _, d := range list {
		m[d.RID] = revKey{d.Generation, d.Revision}
	}
	return m
}

// diffInto notifies w of every difference between known and list and
// returns the new snapshot.
func diffInto(w *watcher, known map[string]revKey, list []Descriptor) map[string]revKey {
	next := snapshot(list)
	for rid, k := range next {
		if old, ok := known[rid]; !ok || old != k {
			w.notify(EventPut, rid)
		}
	}
	for rid := range known {
		if _, ok := next[rid]; !ok {
			w.notify(EventDelete, rid)
		}
	}
	return next
}

// parseEvent reads a push: "p EPOCH SEQ RID" (put or changed) or "d EPOCH
// SEQ RID" (deleted or expired). ok is false for anything else.
func parseEvent(s string) (kind EventKind, rid string, rev MeshRevision, ok bool) {
	k, rest, _ := strings.Cut(s, " ")
	epoch, rest, _ := strings.Cut(rest, " ")
	seq, rid, _ := strings.Cut(rest, " ")
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || rid == "" || len(rid) > maxNameLen || len(epoch) > 64 {
		return 0, "", MeshRevision{}, false
	}
	switch k {
	case "p":
		kind = EventPut
	case "d":
		kind = EventDelete
	default:
		return 0, "", MeshRevision{}, false
	}
	return kind, rid, MeshRevision{Epoch: epoch, Seq: n}, true
}
