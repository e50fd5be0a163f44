package spot_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// spanRec records the spans of every node of a test in one list; a span's
// trace context is its index, so a child names its parent across nodes.
type spanRec struct {
	mu    sync.Mutex
	spans []recordedSpan
}

type recordedSpan struct {
	info   routemesh.SpanInfo
	parent int // index+1 of the parent; 0 = a root
	ended  bool
}

type spanRecKey struct{}

type recSpanRef struct {
	r *spanRec
	i int
}

func (r *spanRec) start(info routemesh.SpanInfo, parent int) *recSpanRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, recordedSpan{info: info, parent: parent})
	return &recSpanRef{r: r, i: len(r.spans) - 1}
}

func (r *spanRec) StartCall(ctx context.Context, s routemesh.SpanInfo) (routemesh.Span, string) {
	parent := 0
	if p, ok := ctx.Value(spanRecKey{}).(*recSpanRef); ok {
		parent = p.i + 1
	}
	sp := r.start(s, parent)
	return sp, strconv.Itoa(sp.i + 1)
}

func (r *spanRec) StartHandler(ctx context.Context, tc string, s routemesh.SpanInfo) (context.Context, routemesh.Span) {
	parent, _ := strconv.Atoi(tc)
	sp := r.start(s, parent)
	return context.WithValue(ctx, spanRecKey{}, sp), sp
}

func (s *recSpanRef) End(error) {
	s.r.mu.Lock()
	s.r.spans[s.i].ended = true
	s.r.mu.Unlock()
}

// ancestry returns the kinds of the span i's ancestors, nearest first, each
// with the node it ran on.
func (r *spanRec) ancestry(i int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for p := r.spans[i].parent; p != 0; p = r.spans[p-1].parent {
		s := r.spans[p-1]
		out = append(out, fmt.Sprintf("%s@%s", s.info.Kind, s.info.Target))
	}
	return out
}

// A one-way message that reaches an Object Server that does not own its
// Spot is forwarded, once, to the owner the record names, and delivered
// there: none is dropped. Here A owns every Spot (it was the only Object
// Server when they were made); B joins, and a new client's sends for the
// Spots that now place on B reach B first. The forward continues the
// sender's trace: the turn on A descends from the client's send span
// through B.
func TestSpot_SendToANonOwnerIsForwardedToTheOwner(t *testing.T) {
	store := location.NewMemory()
	rec := &spanRec{}
	traced := func(b *routemesh.MeshBuilder) { b.SetTracer(rec) }
	_, a := startNode(t, store, "osA", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{counterKind(nil, 0)}, more: traced})
	_, c1 := startNode(t, store, "ocA", nodeOpts{role: routemesh.ObjectClient, more: traced})
	waitSpots(t, a, c1)
	const spots = 24
	ids := make([]string, spots)
	for i := range ids {
		ids[i] = fmt.Sprintf("f%d", i)
		if _, err := spot.Call(ctxT(t, 10*time.Second), c1, "counter", ids[i], getP, struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	_, b := startNode(t, store, "osB", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{counterKind(nil, 0)}, more: traced})
	_, c2 := startNode(t, store, "ocB", nodeOpts{role: routemesh.ObjectClient, more: traced})
	waitSpots(t, a, b, c2)
	// c2 places on B once its placement lists B: fresh probe Spots until
	// one lands there.
	body, _ := getP.EncodeRequest(struct{}{})
	for k := 0; ; k++ {
		_, res, err := spot.CallRaw(ctxT(t, 10*time.Second), c2, "counter", fmt.Sprintf("probe%d", k), getP.Name(), body)
		if err != nil {
			t.Fatal(err)
		}
		if res.Owner == b.RID() {
			break
		}
		if k == 500 {
			t.Fatal("c2 never placed a Spot on B")
		}
		time.Sleep(5 * time.Millisecond) // poll: B joins c2's placement at its next store listing
	}

	// c2 has never called these Spots: each send goes where placement says,
	// B for about half of them, and B forwards those to A.
	for _, id := range ids {
		if err := spot.Send(ctxT(t, 10*time.Second), c2, "counter", id, pingP, add{N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every send delivered", 10*time.Second, func() bool {
		for _, id := range ids {
			n, err := spot.Call(ctxT(t, 10*time.Second), c1, "counter", id, getP, struct{}{})
			if err != nil || n != 1 {
				return false
			}
		}
		return true
	})
	stA, errA := spot.StatsOf(a)
	stB, errB := spot.StatsOf(b)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if stB.Redirects == 0 {
		t.Fatal("no send reached B: the test forwarded nothing")
	}
	if stA.SendsDropped+stB.SendsDropped != 0 {
		t.Fatalf("sends dropped: A %d, B %d", stA.SendsDropped, stB.SendsDropped)
	}
	for _, id := range spotsOn(t, b) {
		if id[0] == 'f' {
			t.Fatalf("B activated %s: a forwarded send must not claim", id)
		}
	}

	// Every ping turn on A descends from c2's send span; the forwarded ones
	// through B's routing span and its send.
	forwarded := 0
	rec.mu.Lock()
	var turns []int
	for i, s := range rec.spans {
		if s.info.Kind == routemesh.SpanSpotTurn && s.info.Packet == "ping" {
			turns = append(turns, i)
		}
	}
	rec.mu.Unlock()
	if len(turns) != spots {
		t.Fatalf("%d ping turns traced, want %d", len(turns), spots)
	}
	for _, i := range turns {
		anc := rec.ancestry(i)
		switch {
		case len(anc) == 1 && anc[0] == fmt.Sprintf("%s@%s", routemesh.SpanSend, a.RID()):
		case len(anc) == 3 && anc[0] == fmt.Sprintf("%s@%s", routemesh.SpanSend, a.RID()) &&
			anc[1] == fmt.Sprintf("%s@%s", routemesh.SpanHandler, b.RID()) &&
			anc[2] == fmt.Sprintf("%s@%s", routemesh.SpanSend, b.RID()):
			forwarded++
		default:
			t.Fatalf("ping turn %d descends from %v", i, anc)
		}
	}
	if forwarded == 0 {
		t.Fatal("no traced turn came through B")
	}
}

// spotsOn lists the counter Spots active on n.
func spotsOn(t *testing.T, n *routemesh.Node) []string {
	t.Helper()
	ids, err := spot.Active(n, "counter", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
