package routemesh

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zlink-go/zlink/wire"
)

// The batcher's rules, driven as the writer drives it but with the lanes
// given as a script: each take hands over the next queued chunk.

// out is one write the batcher decided: a raw frame or a batch.
type out struct {
	frame string
	batch []uint64 // the envelopes' Corr
	size  int
}

// chunk is what the lanes hold at one take.
type chunk struct {
	data []wire.Envelope
	ctl  []outItem
}

// drive runs b as the writer's loop does until the script is spent and
// nothing is held, and returns the writes in order and the yields.
func drive(t *testing.T, b *batcher, script []chunk) (writes []out, yields int) {
	t.Helper()
	take := func() bool {
		if b.held() {
			return true
		}
		if len(script) == 0 {
			return false
		}
		c := script[0]
		script = script[1:]
		b.refill(c.data, c.ctl)
		return b.held()
	}
	for take() || len(script) > 0 {
		if !b.held() {
			continue // an empty take: the writer waits for more
		}
		if f := b.frame(); f != nil {
			writes = append(writes, out{frame: string(f)})
			continue
		}
		b.open(b.maxBatch) // the limit the test gave it
		for b.fill() {
			if take() {
				continue
			}
			if !b.yield() {
				break
			}
			yields++
		}
		batch := b.seal()
		if len(batch) == 0 {
			t.Fatal("the batcher holds items but sealed nothing") // it would spin
		}
		o := out{}
		for _, e := range batch {
			o.batch = append(o.batch, e.Corr)
			o.size += e.Size()
		}
		writes = append(writes, o)
		b.sent()
	}
	return writes, yields
}

func req(corr uint64, payload int) wire.Envelope {
	return wire.Envelope{Kind: wire.KindRequest, Corr: corr, Payload: make([]byte, payload)}
}

func rep(corr uint64, payload int) outItem {
	return outItem{env: wire.Envelope{Kind: wire.KindReply, Corr: corr, Payload: make([]byte, payload)}}
}

func raw(s string) outItem { return outItem{frame: []byte(s)} }

func TestBatcher_Rules(t *testing.T) {
	big := req(9, 2000) // larger than the 1000-byte limit below by itself
	cases := []struct {
		name     string
		maxBatch int
		script   []chunk
		want     []out // Corr lists and frames; sizes are checked apart
	}{
		{name: "empty input", maxBatch: 1 << 20, script: nil, want: nil},
		{name: "empty takes", maxBatch: 1 << 20, script: []chunk{{}, {}}, want: nil},
		{
			name: "control before data, each lane in order", maxBatch: 1 << 20,
			script: []chunk{{data: []wire.Envelope{req(1, 0), req(2, 0)}, ctl: []outItem{rep(10, 0), rep(11, 0)}}},
			want:   []out{{batch: []uint64{10, 11, 1, 2}}},
		},
		{
			name: "a later take joins the open batch, its control first", maxBatch: 1 << 20,
			script: []chunk{
				{data: []wire.Envelope{req(1, 0)}},
				{data: []wire.Envelope{req(2, 0)}, ctl: []outItem{rep(10, 0)}},
			},
			want: []out{{batch: []uint64{1, 10, 2}}},
		},
		{
			name: "a raw frame goes alone, between the control envelopes around it", maxBatch: 1 << 20,
			script: []chunk{{data: []wire.Envelope{req(1, 0)}, ctl: []outItem{rep(10, 0), raw("hello"), rep(11, 0)}}},
			want:   []out{{batch: []uint64{10}}, {frame: "hello"}, {batch: []uint64{11, 1}}},
		},
		{
			name: "raw frames first and back to back", maxBatch: 1 << 20,
			script: []chunk{{ctl: []outItem{raw("a"), raw("b")}}, {ctl: []outItem{raw("c")}}},
			want:   []out{{frame: "a"}, {frame: "b"}, {frame: "c"}},
		},
		{
			name: "the byte limit splits batches", maxBatch: 1000,
			script: []chunk{{data: []wire.Envelope{req(1, 400), req(2, 400), req(3, 400), req(4, 400)}}},
			want:   []out{{batch: []uint64{1, 2}}, {batch: []uint64{3, 4}}},
		},
		{
			name: "an envelope larger than the limit goes alone", maxBatch: 1000,
			script: []chunk{{data: []wire.Envelope{req(1, 10), big, req(2, 10)}}},
			want:   []out{{batch: []uint64{1}}, {batch: []uint64{9}}, {batch: []uint64{2}}},
		},
		{
			name: "an oversized envelope alone on the control lane", maxBatch: 1000,
			script: []chunk{{ctl: []outItem{{env: big}}, data: []wire.Envelope{req(1, 10)}}},
			want:   []out{{batch: []uint64{9}}, {batch: []uint64{1}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &batcher{maxBatch: tc.maxBatch}
			got, _ := drive(t, b, tc.script)
			if len(got) != len(tc.want) {
				t.Fatalf("writes = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].frame != tc.want[i].frame || !slices.Equal(got[i].batch, tc.want[i].batch) {
					t.Fatalf("write %d = %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
				if len(got[i].batch) > 1 && got[i].size > tc.maxBatch {
					t.Fatalf("write %d: %d bytes in a batch, limit %d", i, got[i].size, tc.maxBatch)
				}
			}
			if b.held() {
				t.Fatal("items still held after the script")
			}
		})
	}
}

func TestBatcher_ItemLimit(t *testing.T) {
	data := make([]wire.Envelope, maxBatchItems+10)
	for i := range data {
		data[i] = wire.Envelope{Kind: wire.KindSend, Corr: uint64(i + 1)}
	}
	got, _ := drive(t, &batcher{maxBatch: 1 << 30}, []chunk{{data: data}})
	if len(got) != 2 || len(got[0].batch) != maxBatchItems || len(got[1].batch) != 10 {
		t.Fatalf("batches of %d envelopes: got %d writes", maxBatchItems+10, len(got))
	}
}

// TestBatcher_NothingLostOrDuplicated drives random scripts: every item
// comes out exactly once, each lane in order, control never behind data
// that was taken later, and every batch within its limits.
func TestBatcher_NothingLostOrDuplicated(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		maxBatch := 200 + r.IntN(2000)
		var script []chunk
		var wantData, wantCtl []string
		var corr uint64
		for range r.IntN(20) {
			var c chunk
			for range r.IntN(40) {
				corr++
				c.data = append(c.data, req(corr, r.IntN(300)))
				wantData = append(wantData, fmt.Sprint(corr))
			}
			for range r.IntN(40) {
				corr++
				if r.IntN(10) == 0 {
					c.ctl = append(c.ctl, raw(fmt.Sprint(corr)))
				} else {
					c.ctl = append(c.ctl, rep(corr, r.IntN(300)))
				}
				wantCtl = append(wantCtl, fmt.Sprint(corr))
			}
			script = append(script, c)
		}
		b := &batcher{maxBatch: maxBatch}
		writes, _ := drive(t, b, script)
		var gotData, gotCtl []string
		for _, w := range writes {
			if w.frame != "" {
				gotCtl = append(gotCtl, w.frame)
				continue
			}
			if len(w.batch) > 1 && w.size > maxBatch {
				t.Fatalf("seed %d: a batch of %d bytes, limit %d", seed, w.size, maxBatch)
			}
			if len(w.batch) == 0 || len(w.batch) > maxBatchItems {
				t.Fatalf("seed %d: a batch of %d envelopes", seed, len(w.batch))
			}
			for _, c := range w.batch {
				if slices.Contains(wantData, fmt.Sprint(c)) {
					gotData = append(gotData, fmt.Sprint(c))
				} else {
					gotCtl = append(gotCtl, fmt.Sprint(c))
				}
			}
		}
		if !slices.Equal(gotData, wantData) || !slices.Equal(gotCtl, wantCtl) {
			t.Fatalf("seed %d: data %v control %v; want data %v control %v", seed, gotData, gotCtl, wantData, wantCtl)
		}
	}
}

// TestBatcher_SentSlotsAreCleared: no payload stays referenced by the
// batcher once its items went out (the lanes' slices are reused).
func TestBatcher_SentSlotsAreCleared(t *testing.T) {
	b := &batcher{maxBatch: 1 << 20}
	data := []wire.Envelope{req(1, 8), req(2, 8)}
	ctl := []outItem{rep(3, 8), raw("x")}
	drive(t, b, []chunk{{data: data, ctl: ctl}})
	for i, e := range data {
		if e.Payload != nil {
			t.Fatalf("data slot %d still references its payload", i)
		}
	}
	for i, it := range ctl {
		if it.env.Payload != nil || it.frame != nil {
			t.Fatalf("control slot %d still references its item", i)
		}
	}
	for i, e := range b.batch[:cap(b.batch)] {
		if e.Payload != nil {
			t.Fatalf("batch slot %d still references its payload", i)
		}
	}
	d, c := b.refill(nil, nil)
	if len(d) != 0 || len(c) != 0 || cap(d) != 2 || cap(c) != 2 {
		t.Fatalf("refill gave back %d/%d data, %d/%d control; want the drained slices, empty", len(d), cap(d), len(c), cap(c))
	}
}

// TestBatcher_Yield: a batch that found the lanes dry waits one scheduler
// pass, once, while it is small; a quiet pipe skips the pass but for one
// batch in quietProbe; a pass that brought more ends the quiet.
func TestBatcher_Yield(t *testing.T) {
	one := func() []chunk { return []chunk{{data: []wire.Envelope{req(1, 0)}}} }
	b := &batcher{maxBatch: 1 << 20}
	if _, y := drive(t, b, one()); y != 1 || !b.quiet {
		t.Fatalf("first single: %d yields, quiet %v; want 1, quiet", y, b.quiet)
	}
	for i := 1; i < quietProbe; i++ {
		if _, y := drive(t, b, one()); y != 0 {
			t.Fatalf("quiet batch %d: %d yields, want 0", i, y)
		}
	}
	if _, y := drive(t, b, one()); y != 1 {
		t.Fatalf("probing batch: %d yields, want 1", y)
	}
	// A batch of two ends the quiet.
	drive(t, b, []chunk{{data: []wire.Envelope{req(1, 0), req(2, 0)}}})
	if b.quiet {
		t.Fatal("still quiet after a batch of two")
	}
	// A large batch does not wait.
	data := make([]wire.Envelope, yieldBelow)
	if _, y := drive(t, &batcher{maxBatch: 1 << 20}, []chunk{{data: data}}); y != 0 {
		t.Fatalf("a batch of %d: %d yields, want 0", yieldBelow, y)
	}
	// The yield that brought more: the batch grows, the pipe is not quiet.
	b = &batcher{maxBatch: 1 << 20}
	b.refill([]wire.Envelope{req(1, 0)}, nil)
	b.open(b.maxBatch)
	if !b.fill() || !b.yield() {
		t.Fatal("a dry single batch does not yield")
	}
	b.refill([]wire.Envelope{req(2, 0)}, nil) // a caller ran meanwhile
	if !b.fill() || b.yield() {
		t.Fatal("a batch yielded twice")
	}
	if got := b.seal(); len(got) != 2 || b.quiet {
		t.Fatalf("sealed %d envelopes, quiet %v; want 2, not quiet", len(got), b.quiet)
	}
}

func TestBatcher_Trim(t *testing.T) {
	b := &batcher{maxBatch: 1 << 20}
	b.refill(make([]wire.Envelope, 0, 100), make([]outItem, 0, 10))
	b.batch = make([]wire.Envelope, 0, 100)
	b.trim(64)
	if b.data != nil || b.batch != nil || cap(b.ctl) != 10 {
		t.Fatalf("after trim: data cap %d, batch cap %d, control cap %d", cap(b.data), cap(b.batch), cap(b.ctl))
	}
}
