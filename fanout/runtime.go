package fanout

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/supervisor"
)

// DefaultSupervision is how a publisher or subscriber actor is restarted
// when it runs in the internal actor system (no System in its config):
// one-for-one, at most 5 restarts within 10s with a backoff from 10ms
// doubling up to 1s; past that it is stopped and Err reports the failure.
// A Host gives its fanout:<channel> supervisors the same settings.
func DefaultSupervision() supervisor.Config {
	return supervisor.Config{Kind: supervisor.OneForOne, MaxRestarts: 5, Within: 10 * time.Second,
		Backoff: 10 * time.Millisecond, MaxBackoff: time.Second}
}

// stopTimeout bounds Close's wait for the actor and its goroutines.
const stopTimeout = 10 * time.Second

// group tracks every goroutine of a publisher or subscriber across all its
// actor incarnations. Go refuses to start one after Close; Close waits for
// all of them.
type group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f on a tracked goroutine; false if the group is closed.
func (g *group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Close refuses new goroutines and waits for the running ones.
func (g *group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// host is where a publisher's or subscriber's actor lives: the configured
// System under Parent, or an internal System owned by the handle.
type host struct {
	sys    *actors.System
	parent *actors.Ref
	own    bool
	ref    *actors.Ref // set once spawned; the actor itself never reads it
}

// newHost picks the actor system: sys under parent, or an internal one.
func newHost(sys *actors.System, parent *actors.Ref, log zerolog.Logger) *host {
	if sys != nil {
		return &host{sys: sys, parent: parent}
	}
	return &host{own: true, sys: actors.NewSystem(actors.Config{Name: "fanout", Logger: log, TopLevel: DefaultSupervision()})}
}

// spawn starts the actor made by produce as name under the parent.
func (h *host) spawn(name string, produce func() actors.Actor) error {
	// A publisher's or subscriber's actor receives lifecycle messages and
	// one report per owned goroutine (its sockets are read and written by
	// those goroutines, not through its mailbox): its budget is that bound.
	ref, err := h.sys.Spawn(actors.Spec{Name: name, Kind: name, Parent: h.parent, MaxMessages: 8, Producer: produce})
	if err != nil {
		h.shutdown()
		return fmt.Errorf("zlink: fanout: spawn %s: %w", name, err)
	}
	h.ref = ref
	return nil
}

// stop stops the actor and, when internal, the actor system.
func (h *host) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if h.ref != nil {
		_ = h.ref.Stop(ctx)
	}
	h.shutdown()
}

func (h *host) shutdown() {
	if !h.own {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = h.sys.Shutdown(ctx)
}

// failure reads why the actor at path stopped: its last recorded failure,
// or a stop by its supervisor.
func (h *host) failure(path string) error {
	if n, ok := h.sys.Registry().Find(path); ok && n.LastFailure != nil {
		return fmt.Errorf("%w: %s", ErrFailed, n.LastFailure.Reason)
	}
	return fmt.Errorf("%w: stopped by its supervisor", ErrFailed)
}

// markFailed makes a failed publisher or subscriber visible on its parent
// in the tree (the failed actor itself leaves the tree when it stops).
func (h *host) markFailed(role string, err error) {
	if h.parent != nil {
		h.sys.Registry().SetInfo(h.parent.Path(), role, err.Error())
	}
}

// crash is the test hook that makes an actor's Receive panic with reason.
type crash struct{ reason string }
