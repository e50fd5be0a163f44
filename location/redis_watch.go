package location

// Watch on the Redis Location Store: SUBSCRIBE plus a periodic re-list.

import (
	"context"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Watch implements Store. It SUBSCRIBEs to the mesh's event channel and
// re-lists every PollInterval (and after every resubscribe), emitting
// events for RIDs that appeared, changed or disappeared. It fails when the
// initial listing fails.
func (r *Redis) Watch(ctx context.Context, mesh string) (<-chan Event, error) {
	if err := validMesh(mesh); err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	base, err := r.ListDescriptors(ctx, mesh)
	if err != nil {
		return nil, err
	}
	known := snapshot(base)
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
		r.subscribe(hookCtx, wctx, mesh, w)
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
	go func() { // poller: expiry and lost pushes
		defer r.wg.Done()
		defer stop()
		defer cancel()
		t := time.NewTicker(r.cfg.PollInterval)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			case <-subscribed: // resubscribed after a reconnect: pushes may be lost
			}
			list, err := r.ListDescriptors(wctx, mesh)
			if err != nil {
				continue // Redis unreachable: try again next tick
			}
			known = diffInto(w, known, list)
		}
	}()
	return w.out, nil
}

func (r *Redis) subscribe(hookCtx, ctx context.Context, mesh string, w *watcher) {
	ch := r.eventsChannel(mesh)
	for ctx.Err() == nil {
		_ = r.client.Receive(hookCtx, r.client.B().Subscribe().Channel(ch).Build(), func(msg rueidis.PubSubMessage) {
			kind, rid, ok := parseEvent(msg.Message)
			if ok {
				w.notify(kind, rid)
			}
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

func parseEvent(s string) (EventKind, string, bool) {
	kind, rid, ok := strings.Cut(s, " ")
	if !ok || rid == "" || len(rid) > maxNameLen {
		return 0, "", false
	}
	switch kind {
	case "p":
		return EventPut, rid, true
	case "d":
		return EventDelete, rid, true
	}
	return 0, "", false
}
