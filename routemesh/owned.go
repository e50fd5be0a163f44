package routemesh

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
)

// Some work must run on a goroutine of its own (a blocking socket read, a
// writer loop, Location Store calls) but still belongs to a supervised
// actor. The rule: the actor starts the goroutine in Started; a panic on
// the goroutine is recovered and sent to the owning actor as
// goroutinePanic, which re-panics with it, so its supervisor handles it as
// the actor's own failure (restart, or give up).

// goroutinePanic is a panic recovered on a goroutine an actor owns.
type goroutinePanic struct {
	value any
	stack []byte
}

func (g *goroutinePanic) String() string {
	return fmt.Sprintf("goroutine panicked: %v\n%s", g.value, g.stack)
}

// goOwned runs fn on a tracked goroutine whose panic is reported to the
// actor owner() returns at that moment (the current incarnation's), or
// handled by onLost when there is none.
func (n *Node) goOwned(owner func() *actors.Ref, fn func()) bool {
	return n.goTracked(func() {
		defer func() {
			if r := recover(); r != nil {
				gp := &goroutinePanic{value: r, stack: debug.Stack()}
				n.log.Error().Interface("panic", r).Msg("owned goroutine panicked")
				if ref := owner(); ref == nil || ref.TellControl(gp) != nil {
					n.fail(gp)
				}
			}
		}()
		fn()
	})
}

// listenerActor owns the read loop of the node's ROUTER. The ROUTER
// itself belongs to the node (its endpoint never changes), and so does
// the read loop's goroutine: a restart of this actor leaves a running
// loop alone; a loop that panicked is started again by the next
// incarnation.
type listenerActor struct{ n *Node }

func (a *listenerActor) Receive(c *actors.Context) {
	n := a.n
	switch msg := c.Message().(type) {
	case *actors.Started:
		n.listener.Store(c.Self())
		n.routerOnce.Do(func() { n.routerOpen.Store(true); close(n.routerReady) })
		if n.reading.CompareAndSwap(false, true) {
			if !n.goOwned(n.listener.Load, func() { defer n.reading.Store(false); n.readRouter() }) {
				n.reading.Store(false)
			}
		}
	case *goroutinePanic:
		panic(msg)
	}
}

// leaseActor owns the descriptor lease loop. Each incarnation runs its
// own loop from the durable lease state (the latest descriptor, whether
// it is published) and ends it when it ends.
type leaseActor struct {
	n      *Node
	cancel context.CancelFunc
}

func (a *leaseActor) Receive(c *actors.Context) {
	n := a.n
	switch msg := c.Message().(type) {
	case *actors.Started:
		self := c.Self()
		var ctx context.Context
		ctx, a.cancel = context.WithCancel(n.dctx)
		le := n.lease
		if !le.begin() {
			return // the node is stopping: no new loop
		}
		if !n.goOwned(func() *actors.Ref { return self }, func() { defer le.wg.Done(); le.run(ctx) }) {
			le.wg.Done()
		}
	case *actors.Restarting, *actors.Stopping:
		if a.cancel != nil {
			a.cancel()
		}
	case *goroutinePanic:
		panic(msg)
	}
}

// writerActor stands for a ready pipe's writer loop in the tree, under its
// peer actor. The loop is the pipe's own goroutine (a panic there drops
// the pipe, like a send failure); a restart of this actor drops the pipe
// too: its pending calls end with ErrPeerLost and the peer reconnects.
type writerActor struct {
	n    *Node
	mesh *actors.Ref
	p    *pipe
}

func (a *writerActor) Receive(c *actors.Context) {
	if _, ok := c.Message().(*actors.Restarting); ok {
		_ = a.mesh.TellControl(&pipeFailed{p: a.p, err: fmt.Errorf("%w: writer restarted", zerr.ErrPeerLost)})
	}
}

// ownedFlags are the node's records of its owned goroutines.
type ownedFlags struct {
	reading  atomic.Bool                // the ROUTER read loop runs
	listener atomic.Pointer[actors.Ref] // the listener actor's current incarnation
	// routerOpen is set, and routerReady closed, when the listener actor
	// first started: inbound frames handed over before (Events.OnFrame)
	// wait for it, as they waited in the listener's queue before it was read.
	routerOpen  atomic.Bool
	routerReady chan struct{}
	routerOnce  sync.Once
}
