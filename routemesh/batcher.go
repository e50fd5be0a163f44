package routemesh

import "github.com/zlink-go/zlink/wire"

// batcher decides what a pipe writer sends next: a raw frame alone, or
// which of the envelopes taken from the lanes go into the next Batch
// frame. It is a plain value — no lock, no clock, no goroutine, no I/O:
// the writer (writer.go) takes the lanes under its mutex and hands them to
// refill, asks fill, yield and seal what to do, and writes what they
// give it.
//
// Its rules:
//   - each lane keeps its order; the control lane goes before the data
//     lane (a reply is never held behind requests);
//   - a raw frame (handshake) goes alone, after the control envelopes
//     queued before it and before those queued after it;
//   - a batch holds at most maxBatchItems envelopes and at most maxBatch
//     encoded bytes — except a single envelope larger than maxBatch,
//     which goes alone (the peer's limit checks it, not the batcher);
//   - nothing taken is lost or sent twice: an item leaves the batcher
//     once, in a frame or a batch, and its slot is cleared (no payload
//     stays referenced);
//   - before sealing a batch of fewer than yieldBelow envelopes whose
//     lanes ran dry, the writer lets callers about to submit run once
//     (runtime.Gosched) — on a busy node this turns many small frames
//     into one. Not on a quiet pipe (the last such pass brought nothing
//     and no batch since held more than one: a caller waits for each
//     answer), where the pass only delays the frame — except one batch
//     in quietProbe, to notice load.
type batcher struct {
	// maxBatch bounds the open batch's encoded bytes (open).
	maxBatch int
	// the items taken from the lanes: data[di:] and ctl[ci:] are not
	// sent yet (sent slots are cleared).
	data   []wire.Envelope
	ctl    []outItem
	di, ci int
	// the batch being filled, and its encoded size
	batch []wire.Envelope
	size  int
	// yielded: the writer let callers run once for the open batch.
	yielded bool
	// quiet: the last yield before sealing a batch brought no other
	// envelope, and no batch since held more than one.
	quiet bool
	probe int // batches since the last probing yield, mod quietProbe
}

// maxBatchItems bounds the envelopes in one batch.
const maxBatchItems = 4096

// yieldBelow: a batch this small may wait for one scheduler pass.
const yieldBelow = 16

// quietProbe: a quiet writer still yields before one batch in this many.
const quietProbe = 8

// held reports whether items taken from the lanes are not sent yet.
func (b *batcher) held() bool { return b.di < len(b.data) || b.ci < len(b.ctl) }

// refill takes the lanes' queued items (nothing may be held) and gives
// back its own drained slices, emptied, for the lanes to queue into.
func (b *batcher) refill(data []wire.Envelope, ctl []outItem) ([]wire.Envelope, []outItem) {
	oldData, oldCtl := b.data[:0], b.ctl[:0]
	b.data, b.ctl = data, ctl
	b.di, b.ci = 0, 0
	return oldData, oldCtl
}

// frame returns the raw frame first in line and takes it out, or nil
// when an envelope (or nothing) is first: a raw frame goes alone.
func (b *batcher) frame() []byte {
	if b.ci >= len(b.ctl) || b.ctl[b.ci].frame == nil {
		return nil
	}
	f := b.ctl[b.ci].frame
	b.ctl[b.ci] = outItem{}
	b.ci++
	return f
}

// open starts an empty batch of at most maxBatch encoded bytes (the
// peer's receive limit).
func (b *batcher) open(maxBatch int) {
	b.maxBatch = maxBatch
	b.batch = b.batch[:0]
	b.size = 0
	b.yielded = false
}

// fill moves held envelopes into the open batch, control lane first. It
// reports true when it ran out of held items with room left (the writer
// may take more from the lanes and fill again), false when the batch is
// full or a raw frame is next: seal it.
func (b *batcher) fill() bool {
	for len(b.batch) < maxBatchItems {
		switch {
		case b.ci < len(b.ctl):
			it := &b.ctl[b.ci]
			if it.frame != nil || !b.add(&it.env) {
				return false // the batch goes before the frame
			}
			*it = outItem{}
			b.ci++
		case b.di < len(b.data):
			e := &b.data[b.di]
			if !b.add(e) {
				return false
			}
			*e = wire.Envelope{}
			b.di++
		default:
			return true
		}
	}
	return false
}

// add appends e to the batch unless it would take the batch past
// maxBatch (the first envelope always goes in).
func (b *batcher) add(e *wire.Envelope) bool {
	es := e.Size()
	if len(b.batch) > 0 && b.size+es > b.maxBatch {
		return false
	}
	b.batch = append(b.batch, *e)
	b.size += es
	return true
}

// yield reports whether the writer, finding the lanes empty, lets callers
// run once before sealing the open batch (and records that it did); false:
// seal it now.
func (b *batcher) yield() bool {
	if b.yielded || len(b.batch) >= yieldBelow || (b.quiet && b.probe != 0) {
		return false
	}
	b.yielded = true
	return true
}

// seal closes the open batch and returns it (empty: nothing to send). The
// writer encodes it, then calls sent.
func (b *batcher) seal() []wire.Envelope {
	if len(b.batch) == 0 {
		return nil
	}
	if b.yielded {
		b.quiet = len(b.batch) == 1
	} else if len(b.batch) > 1 {
		b.quiet = false
	}
	b.probe = (b.probe + 1) % quietProbe
	return b.batch
}

// sent drops the sealed batch's payload references.
func (b *batcher) sent() { clear(b.batch) }

// unsentControl returns the control items taken and not sent (a stopped
// writer flushes them).
func (b *batcher) unsentControl() []outItem { return b.ctl[b.ci:] }

// trim gives up slices a burst grew past maxItems (nothing may be held).
func (b *batcher) trim(maxItems int) {
	if cap(b.data) > maxItems {
		b.data = nil
	}
	if cap(b.ctl) > maxItems {
		b.ctl = nil
	}
	if cap(b.batch) > maxItems {
		b.batch = nil
	}
}
