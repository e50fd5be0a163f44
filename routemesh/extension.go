package routemesh

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/wire"
)

// Extension is a subsystem that lives inside a MeshNode and is supervised
// with it; the Spot runtime (package spot) is one. The node builds it once
// at Start, after the ROUTER bound and before the node is ready; every
// incarnation of the mesh actor spawns its actor (Spec) as a child, so a
// restart of the mesh actor rebuilds it; Stop runs once when the node
// stops, after new calls are refused and before the descriptor is
// withdrawn.
type Extension interface {
	// Spec is the extension's actor, a child of the mesh actor.
	Spec() actors.Spec
	// Stop ends the extension's work (every admitted request gets its
	// terminal result) and gives up what it holds in the Location Store,
	// bounded by ctx.
	Stop(ctx context.Context)
}

// KindHost is an Extension that hosts kinds of objects on an Object
// Server (the Spot runtime hosts Spot kinds). The node lists them in its
// descriptor (location.Descriptor.Kinds), so callers place a kind only on
// the Object Servers that host it. HostedKinds is asked once, after every
// extension was built at Start; the names must meet the Location Store's
// limits (at most 64, each a Spot kind name of at most 256 bytes), which
// the extension checks when it is built.
type KindHost interface {
	HostedKinds() []string
}

// ExtensionFactory builds an extension for a starting node. An error
// fails Start.
type ExtensionFactory func(n *Node) (Extension, error)

type extensionReg struct {
	name    string
	factory ExtensionFactory
}

// Extend attaches an extension under name (one per name; a second one is
// refused). Packages that build on the RouteMesh use it (spot.Enable);
// applications do not need it.
func (b *MeshBuilder) Extend(name string, f ExtensionFactory) *MeshBuilder {
	for _, r := range b.cfg.extensions {
		if r.name == name {
			b.refuse("", "Extend: extension "+name+" attached twice")
			return b
		}
	}
	if name == "" || f == nil {
		b.refuse("", "Extend: empty name or nil factory")
		return b
	}
	b.cfg.extensions = append(b.cfg.extensions, extensionReg{name: name, factory: f})
	return b
}

// HandleDirectDeferred registers a Node-direct request handler that
// answers later: h runs on the goroutine that delivers the request (the
// connection's reader for a remote caller, the caller's own for a local
// one), in arrival order per connection, without crossing the direct
// owner's mailbox — so it must return at once without blocking (hand the
// request on) and end the Request exactly once later, from any goroutine,
// with Reply or Fail. It does not wait behind the direct owner's other
// handlers, and the direct owner's budgets do not count it (bound what it
// hands on where it hands it: a Spot's mailbox has its own). Until then the request counts as the node's work
// (Drain and Stop wait for it). Meant for extensions (their handlers are
// allowed on every object role); the packet name must not collide with
// any other Node-direct handler.
func (b *MeshBuilder) HandleDirectDeferred(packet string, h DeferredHandler) *MeshBuilder {
	if !b.checkHandler("", "HandleDirectDeferred", packet, h == nil,
		b.cfg.directDeferred[packet] != nil || b.cfg.directRequests[packet] != nil) {
		return b
	}
	if b.cfg.directDeferred == nil {
		b.cfg.directDeferred = map[string]DeferredHandler{}
	}
	b.cfg.directDeferred[packet] = h
	return b
}

// DeferredHandler takes a Request and ends it later (see
// HandleDirectDeferred).
type DeferredHandler func(r *Request)

// Request is one Node-direct request taken by a DeferredHandler. Its
// fields are fixed; Reply and Fail end it, the first one wins.
type Request struct {
	// From is the calling node's RID; RID is this node's.
	From, RID string
	// Packet is the packet name.
	Packet string
	// Deadline is the caller's deadline (its remaining budget at send).
	Deadline time.Time
	// Payload is the request payload.
	Payload []byte
	// OneWay is true for a one-way message (SendNode): Reply and Fail
	// only end it, nothing goes back.
	OneWay bool
	// Trace is the caller's trace context ("" = none), for
	// Tracer.StartHandler of whatever runs the request.
	Trace string

	n    *Node
	to   *link
	corr uint64
	done atomic.Bool
}

// Node returns the node the request arrived at.
func (r *Request) Node() *Node { return r.n }

// Reply ends the request with a reply payload. Later calls do nothing.
func (r *Request) Reply(payload []byte) {
	if r.done.Swap(true) {
		return
	}
	if r.OneWay {
		r.n.work.done()
		return
	}
	r.n.reply(r.to, wire.Envelope{Kind: wire.KindReply, Corr: r.corr, Payload: payload})
	r.n.work.done()
}

// Fail ends the request with an error: framework errors (wire codes) keep
// their code, anything else reaches the caller as ErrHandler. Later calls
// do nothing.
func (r *Request) Fail(err error) {
	if r.done.Swap(true) {
		return
	}
	if r.OneWay {
		r.n.work.done()
		return
	}
	r.n.reply(r.to, wire.ErrorEnvelope(r.corr, handlerError(err)))
	r.n.work.done()
}

// Done reports whether the request has been ended.
func (r *Request) Done() bool { return r.done.Load() }

// deferredFor returns the deferred handler of a Node-direct request or
// send, or nil.
func (n *Node) deferredFor(e *wire.Envelope) DeferredHandler {
	if e.Channel != "" || (e.Kind != wire.KindRequest && e.Kind != wire.KindSend) {
		return nil
	}
	return n.cfg.directDeferred[e.Packet]
}

// runDeferred hands an admitted request (counted in the node's work) to
// its deferred handler on the delivering goroutine; a panicking handler
// ends the request with ErrHandler. at is when the envelope arrived (zero:
// now).
func (n *Node) runDeferred(h DeferredHandler, from *link, e *wire.Envelope, at time.Time) {
	if at.IsZero() {
		at = time.Now()
	}
	r := &Request{From: from.rid, RID: n.rid, Packet: e.Packet, Payload: e.Payload, OneWay: e.Kind == wire.KindSend,
		Deadline: at.Add(time.Duration(e.TimeoutMs) * time.Millisecond), n: n, to: from, corr: e.Corr, Trace: e.Trace}
	if r.OneWay {
		r.Deadline = at.Add(DefaultRequestTimeout)
	}
	defer func() {
		if p := recover(); p != nil {
			n.log.Error().Str("packet", e.Packet).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("deferred handler panicked")
			r.Fail(fmt.Errorf("%w: handler panicked: %v", zerr.ErrHandler, p))
		}
	}()
	h(r)
}

// Drainer is an Extension that takes part in Drain: Node.Drain calls it
// once the node is draining and waits for it (bounded by the drain
// timeout) before it waits for the admitted work.
type Drainer interface {
	Drain(ctx context.Context) error
}

// drainExtensions runs every Drainer, last attached first.
func (n *Node) drainExtensions(ctx context.Context) error {
	var errs []error
	for i := len(n.exts) - 1; i >= 0; i-- {
		if d, ok := n.exts[i].ext.(Drainer); ok {
			if err := d.Drain(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.exts[i].name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// startExtensions builds the configured extensions (Start).
func (n *Node) startExtensions() error {
	for _, reg := range n.cfg.extensions {
		ext, err := reg.factory(n)
		if err != nil {
			return fmt.Errorf("zlink: mesh %s: extension %s: %w", n.cfg.Mesh, reg.name, err)
		}
		n.exts = append(n.exts, namedExtension{name: reg.name, ext: ext})
	}
	return nil
}

// stopExtensions stops every extension, last attached first (Stop).
func (n *Node) stopExtensions(ctx context.Context) {
	for i := len(n.exts) - 1; i >= 0; i-- {
		n.exts[i].ext.Stop(ctx)
	}
}

type namedExtension struct {
	name string
	ext  Extension
}

// Extension returns the extension attached under name, or nil.
func (n *Node) Extension(name string) Extension {
	for _, e := range n.exts {
		if e.name == name {
			return e.ext
		}
	}
	return nil
}

// Store returns the node's Location Store (nil without one).
func (n *Node) Store() location.Store { return n.store }

// ObjectRole returns the node's object role.
func (n *Node) ObjectRole() ObjectRole { return n.cfg.ObjectRole }

// PlacementWeight returns the node's placement weight for Spots.
func (n *Node) PlacementWeight() uint32 { return n.cfg.PlacementWeight }

// DescriptorTTL returns the node's descriptor lease.
func (n *Node) DescriptorTTL() time.Duration { return n.cfg.DescriptorTTL }

// DiscoveryPoll returns how often the node's discovery reads the mesh
// revision.
func (n *Node) DiscoveryPoll() time.Duration { return n.cfg.DiscoveryPoll }

// Logger returns the node's logger (fields mesh, rid, endpoint).
func (n *Node) Logger() zerolog.Logger { return n.log }

// PeerReady reports whether the node has a ready connection to rid (its
// own RID counts as ready), and whether that peer last said it is
// draining (for its own RID: whether this node is draining).
func (n *Node) PeerReady(rid string) (ready, draining bool) {
	v := n.load()
	if rid == n.rid {
		return v.state == NodeReady || v.state == NodeDraining, v.state == NodeDraining
	}
	l := v.links[rid]
	if l == nil {
		return false, false
	}
	return true, l.draining.Load()
}

// published reports whether the node's descriptor has been written to the
// Location Store at least once and not withdrawn.
func (n *Node) published() bool {
	return n.lease != nil && n.lease.published.Load()
}

// Actors returns the actor system the node's actors run on (extensions
// spawn their children with it).
func (n *Node) Actors() *actors.System { return n.sys }

// manualTopology reports whether the node has any manual connection
// intent (AddPeer) or a fixed RID without automatic discovery: moves of a
// whole host (Host Relocate) are not supported there, since peers address
// it by endpoint and RID.
func (n *Node) manualTopology() bool { return len(n.cfg.Peers) > 0 || !n.cfg.Automatic() }
