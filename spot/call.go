package spot

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot/internal/placement"
	"github.com/zlink-go/zlink/wire"
)

// Call sends req to the Spot (kind, id) through node n and returns its
// typed reply. It ends exactly once: the reply, or an error that matches
// ErrNoTarget (no ready Object Server hosts the kind, a second "kind not
// hosted" answer, or more than two redirects),
// ErrCycle, ErrFenced, ErrHandler, or one of the RouteMesh's terminal
// errors (ErrTimeout at ctx's deadline, ErrBusy, ErrPeerLost, ...). Called
// with a handler's *Context, the call carries the call chain.
func Call[Req, Resp any](ctx context.Context, n *routemesh.Node, kind, id string, p wire.Packet[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	b, err := p.EncodeRequest(req)
	if err != nil {
		return zero, err
	}
	out, _, err := CallRaw(ctx, n, kind, id, p.Name(), b)
	if err != nil {
		return zero, err
	}
	return p.DecodeReply(out)
}

// Send delivers msg to the Spot (kind, id) one way. A nil error means the
// message was handed to a node; a non-owner forwards it once to the owner
// it knows.
func Send[Msg, Unused any](ctx context.Context, n *routemesh.Node, kind, id string, p wire.Packet[Msg, Unused], msg Msg) error {
	b, err := p.EncodeRequest(msg)
	if err != nil {
		return err
	}
	return SendRaw(ctx, n, kind, id, p.Name(), b)
}

// Result says who answered a raw call.
type Result struct {
	Owner string // RID of the owner that ran the turn
	Epoch uint64 // ownership epoch of the activation that ran it
}

// CallRaw is Call on bytes; it also says which owner answered.
func CallRaw(ctx context.Context, n *routemesh.Node, kind, id, packet string, payload []byte) ([]byte, Result, error) {
	rt, err := of(n)
	if err != nil {
		return nil, Result{}, err
	}
	return rt.call(ctx, kind, id, packet, payload)
}

// SendRaw is Send on bytes.
func SendRaw(ctx context.Context, n *routemesh.Node, kind, id, packet string, payload []byte) error {
	rt, err := of(n)
	if err != nil {
		return err
	}
	return rt.send(ctx, kind, id, packet, payload)
}

// chainOf returns the call chain a call made with ctx carries, and the
// activation whose turn makes it (nil outside a Spot handler).
func chainOf(ctx context.Context) ([]link, *Context) {
	c, _ := ctx.Value(chainKey{}).(*Context)
	if c == nil || c.act == nil {
		return nil, nil
	}
	return c.chain, c
}

func (rt *runtime) check(kind, id string) error {
	if rt.role == routemesh.ObjectNone {
		return fmt.Errorf("%w: a MeshNode with object role None calls no Spot", ErrRole)
	}
	if kind == "" || id == "" || len(kind) > maxName || len(id) > maxName {
		return fmt.Errorf("%w: spot kind %.64q id %.64q", zerr.ErrBadPayload, kind, id)
	}
	return nil
}

// request builds the header of a call. Made from a Spot turn, the call
// extends the turn's call chain with a link of its own, which the returned
// done must forget once the call has ended.
func (rt *runtime) request(ctx context.Context, kind, id, packet string, payload []byte) (*header, func(), error) {
	if err := rt.check(kind, id); err != nil {
		return nil, nil, err
	}
	h := &header{kind: kind, id: id, packet: packet, body: payload}
	chain, c := chainOf(ctx)
	if c == nil {
		return h, func() {}, nil
	}
	// R2: an outbound call of a turn checks the lease first.
	if !rt.valid(c.act, time.Now()) {
		return nil, nil, fmt.Errorf("%w: %s/%s lost its lease", ErrFenced, c.Kind, c.ID)
	}
	if len(chain) >= maxChain {
		return nil, nil, fmt.Errorf("%w: call chain deeper than %d", ErrCycle, maxChain)
	}
	l := c.act.begin()
	h.chain = append(append(make([]link, 0, len(chain)+1), chain...), l)
	return h, func() { c.act.end(l) }, nil
}

// CallVia is the former name of CallViaRaw.
//
// Deprecated: use CallViaRaw (raw forms that are functions end in Raw);
// CallVia goes away in the next release.
var CallVia = CallViaRaw

// CallViaRaw is CallRaw through the Object Server via: that node makes the
// call on this node's behalf (placement, redirects, claims) and answers
// with the result. For callers that reach the mesh through one node (the
// CLI's --peer); the Location Store is still what Spots need.
func CallViaRaw(ctx context.Context, n *routemesh.Node, via, kind, id, packet string, payload []byte) ([]byte, Result, error) {
	rt, err := of(n)
	if err != nil {
		return nil, Result{}, err
	}
	h, done, err := rt.request(ctx, kind, id, packet, payload)
	if err != nil {
		return nil, Result{}, err
	}
	defer done()
	h.flags |= flagRoute
	return rt.callTo(ctx, h, via)
}

func (rt *runtime) call(ctx context.Context, kind, id, packet string, payload []byte) ([]byte, Result, error) {
	h, done, err := rt.request(ctx, kind, id, packet, payload)
	if err != nil {
		return nil, Result{}, err
	}
	defer done()
	return rt.callTo(ctx, h, rt.cached(kind, id))
}

// callTo sends h to target (or the placement choice when "") and follows
// redirects until the call ends.
//
// Made from a turn of a reentrant kind, the call waits without holding the
// Spot: the deliveries of its own chain run meanwhile, one at a time
// (reentry.go).
func (rt *runtime) callTo(ctx context.Context, h *header, target string) ([]byte, Result, error) {
	backoff := 10 * time.Millisecond
	_, c := chainOf(ctx)
	for {
		if target == "" {
			var ok bool
			if target, ok = rt.placeFor(ctx, h); !ok {
				return nil, Result{}, noServer(h)
			}
		}
		out, err := rt.hopCall(ctx, c, target, h.encode())
		next := rt.afterHop(h, target, out, err)
		if next.done {
			return next.body, next.res, next.err
		}
		target = next.target
		if !next.pause {
			continue
		}
		if err := sleepServing(ctx, c, backoff); err != nil {
			return nil, Result{}, err
		}
		backoff = nextBackoff(backoff)
	}
}

// hopCall makes one hop of a Spot call: a blocking Node-direct request, or
// for a reentrant kind's turn c one that serves c's reentrant deliveries
// while it waits.
func (rt *runtime) hopCall(ctx context.Context, c *Context, target string, payload []byte) ([]byte, error) {
	if !c.reentrant() {
		return rt.n.CallNode(ctx, target, packetSpot, payload)
	}
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, ctxError(ctx)
		}
	}
	return awaitCall(ctx, c, func(f func(routemesh.Reply)) {
		rt.n.CallNodeFuncContext(ctx, target, packetSpot, payload, timeout, f)
	})
}

func noServer(h *header) error {
	return fmt.Errorf("%w: no ready Object Server hosts kind %s (spot %s/%s)", ErrNoTarget, h.kind, h.kind, h.id)
}

func nextBackoff(d time.Duration) time.Duration { return min(2*d, 200*time.Millisecond) }

// hop is what a Spot call does after one hop's answer: it ends (done:
// body and res, or err), or goes on to target ("" = ask placement),
// after a back-off when pause is set.
type hop struct {
	done   bool
	body   []byte
	res    Result
	err    error
	target string
	pause  bool
}

// afterHop reads the answer of target to h (out, or the call's error),
// keeps the owner cache and says what comes next. The blocking and the
// asynchronous calls share it.
func (rt *runtime) afterHop(h *header, target string, out []byte, err error) hop {
	kind, id := h.kind, h.id
	if err != nil {
		rt.cache.drop(kind, id, target)
		return hop{done: true, err: err}
	}
	rep, err := decodeReply(out)
	if err != nil {
		return hop{done: true, err: fmt.Errorf("spot %s/%s reply from %s: %w", kind, id, target, err)}
	}
	switch rep.status {
	case stOK:
		if h.flags&flagRoute != 0 {
			return hop{done: true, body: rep.body, res: Result{Owner: rep.owner, Epoch: rep.epoch}}
		}
		rt.cache.put(kind, id, target)
		return hop{done: true, body: rep.body, res: Result{Owner: cmp.Or(rep.owner, target), Epoch: rep.epoch}}
	case stError:
		if rep.detail == detailNotHosted && h.flags&flagRoute == 0 {
			return rt.notHosted(h, target)
		}
		return hop{done: true, err: rep.err()}
	case stRedirect:
		h.hops++
		if int(h.hops) > rt.cfg.MaxHops {
			rt.cache.drop(kind, id, "")
			return hop{done: true, err: fmt.Errorf("%w: spot %s/%s: more than %d redirects", ErrNoTarget, kind, id, rt.cfg.MaxHops)}
		}
		if h.flags&flagRoute != 0 {
			return hop{done: true, err: fmt.Errorf("%w: %s does not route spot calls", ErrNoTarget, target)}
		}
		if rep.owner != "" && rep.owner != target && rt.reachable(rep.owner) {
			rt.cache.put(kind, id, rep.owner)
			return hop{target: rep.owner}
		}
		if rep.owner != "" && rep.owner != target {
			// The recorded owner is not reachable but its lease lives:
			// wait for it to expire (then a claim succeeds).
			h.hops--
		}
	}
	// A redirect to nobody reachable, or stRetry: ask placement again.
	rt.cache.drop(kind, id, "")
	return hop{pause: true}
}

// notHosted follows a "kind not hosted" answer of target (it did not
// run the call): the first one makes the call place again after a fresh
// listing of the mesh (the caller's listing was older than target's
// kinds); a second one ends it with ErrNoTarget.
func (rt *runtime) notHosted(h *header, target string) hop {
	rt.cache.drop(h.kind, h.id, target)
	if h.relisted {
		return hop{done: true, err: fmt.Errorf("%w: %w: %s does not host kind %s (spot %s/%s), also after a fresh listing of the mesh",
			ErrNoTarget, ErrUnknownKind, target, h.kind, h.kind, h.id)}
	}
	h.relist, h.relisted = true, true
	return hop{}
}

func (rt *runtime) send(ctx context.Context, kind, id, packet string, payload []byte) error {
	h, done, err := rt.request(ctx, kind, id, packet, payload)
	if err != nil {
		return err
	}
	done() // a send makes no turn wait
	h.chain = nil
	target := rt.cached(kind, id)
	if target == "" {
		var ok bool
		if target, ok = rt.placeFresh(ctx, kind, id); !ok {
			return noServer(h)
		}
	}
	return rt.n.SendNode(ctx, target, packetSpot, h.encode())
}

// sleepCtx waits d or until ctx ends (then the call's terminal error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctxError(ctx)
	}
}

// cached returns the cached owner if it is still reachable (an entry
// whose peer was lost is dropped here).
func (rt *runtime) cached(kind, id string) string {
	rid := rt.cache.get(kind, id)
	if rid == "" {
		return ""
	}
	if !rt.reachable(rid) {
		rt.cache.drop(kind, id, rid)
		return ""
	}
	return rid
}

func (rt *runtime) reachable(rid string) bool {
	ready, _ := rt.n.PeerReady(rid)
	return ready
}

// placeFresh is place; when placement finds nobody it asks for a fresh
// listing of the mesh's Object Servers (one may have joined since the last
// one) and tries once more, waiting at most a second (and ctx).
func (rt *runtime) placeFresh(ctx context.Context, kind, id string) (string, bool) {
	if rid, ok := rt.place(kind, id); ok {
		return rid, true
	}
	if !rt.relist(ctx) {
		return "", false
	}
	return rt.place(kind, id)
}

// relist asks the members actor for a fresh listing and waits for one
// that started after the ask (listings run one at a time, so the next one
// started ends as that number), at most a second (and ctx); false when no
// listing can be asked for or ctx ended.
func (rt *runtime) relist(ctx context.Context) bool {
	ref := rt.membRef.Load()
	if ref == nil {
		return false
	}
	want := rt.listing.Load() + 1
	if ref.Tell(&refreshMembers{}) != nil {
		return false
	}
	deadline := time.Now().Add(time.Second)
	for rt.listed.Load() < want && time.Now().Before(deadline) {
		if sleepCtx(ctx, 5*time.Millisecond) != nil {
			return false
		}
	}
	return true
}

// placeFor is placeFresh for the next hop of call h: after a "kind not
// hosted" answer (h.relist) it first waits for a fresh listing.
func (rt *runtime) placeFor(ctx context.Context, h *header) (string, bool) {
	if !h.relist {
		return rt.placeFresh(ctx, h.kind, h.id)
	}
	h.relist = false
	if !rt.relist(ctx) {
		return "", false
	}
	return rt.place(h.kind, h.id)
}

var memberPool = sync.Pool{New: func() any { s := make([]placement.Member, 0, 16); return &s }}

// place picks the Object Server that should claim an unowned Spot of
// kind: one that hosts the kind (kind "": any), ready, not draining, by
// placement weight.
func (rt *runtime) place(kind, id string) (string, bool) {
	ms := *rt.members.Load()
	bp := memberPool.Get().(*[]placement.Member)
	cands := (*bp)[:0]
	self := rt.n.RID()
	listed := false
	for i := range ms {
		m := &ms[i]
		if !m.server {
			continue
		}
		listed = listed || m.rid == self
		if !m.hosts(kind) {
			continue
		}
		ready, draining := rt.n.PeerReady(m.rid)
		cands = append(cands, placement.Member{RID: m.rid, Weight: m.weight, Ready: ready, Draining: draining || m.draining})
	}
	if !listed && rt.role == routemesh.ObjectServer && published(rt.n) && (kind == "" || rt.kinds[kind] != nil) {
		// This node before the next listing shows it.
		ready, draining := rt.n.PeerReady(self)
		cands = append(cands, placement.Member{RID: self, Weight: rt.n.PlacementWeight(), Ready: ready, Draining: draining})
	}
	rid, ok := placement.Owner(kind, id, cands)
	*bp = cands[:0]
	memberPool.Put(bp)
	return rid, ok
}

// hostsKind reports whether the Object Server rid hosts kind as the last
// listing says; true when rid is not listed (it answers for itself).
func (rt *runtime) hostsKind(rid, kind string) bool {
	if rid == rt.n.RID() {
		return rt.kinds[kind] != nil
	}
	ms := *rt.members.Load()
	for i := range ms {
		if ms[i].rid == rid {
			return ms[i].hosts(kind)
		}
	}
	return true
}
