package routemesh

import (
	"runtime"
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// writer is a pipe's outbound queue and batching loop. The data lane holds
// requests and sends (bounded by SendHWM: a full lane is ErrBusy for the
// caller); the control lane holds replies, errors, heartbeats and handshake
// frames (bounded too: overflowing it means the peer cannot keep up, and the
// pipe is closed). The loop drains both lanes into one Batch frame per write,
// with no artificial delay; what goes into each write is its batcher's
// decision (batcher.go), the loop only takes the lanes, yields, encodes
// and writes.
//
// The lanes are slices under one mutex, not channels: a caller appends
// (one uncontended lock), and the loop takes everything queued at once by
// swapping the slices with the ones it has sent — one lock per batch
// instead of a channel receive, contending with the callers, per envelope.
// The lanes hold no memory before the first envelope, and a loop that goes
// idle gives up slices grown large by a burst.
//
// The loop runs only while there is something to send: when it finds both
// lanes empty it marks the writer idle and lingers for writerLinger (a
// caller that queues meanwhile wakes it); then its goroutine ends, and the
// next caller that queues starts it again (spawn). A run that sent only
// heartbeats ends at once, without the linger's timer. A busy pipe's loop
// is woken, as a parked goroutine; a connection at rest holds no writer
// goroutine — its reader alone: the node's beat loop writes its
// heartbeats with a write that never blocks (tryBeat), and queues one
// here only when that cannot be done at once — and the loop's buffers
// stay with the writer (loopState), so a restart allocates nothing.
type writer struct {
	mu   sync.Mutex
	data []wire.Envelope // queued requests and sends (at most hwm)
	ctl  []outItem       // queued control items (at most ctlMax), in order
	// idle: the lanes were empty when the loop last looked; the next
	// caller that queues wakes the loop (parked: it lingers, waiting on
	// wake) or starts one (it ended).
	idle, parked bool
	wake         chan struct{} // buffered 1: at most one signal per park
	// spawn starts run on a goroutine of its own; false when it cannot
	// (the node stopped). nil: a plain goroutine (tests). Both are func
	// values made once: a start allocates nothing.
	spawn func() bool
	runFn func()
	lp    loopState // owned by the running loop

	hwm, ctlMax int
	quit        chan struct{}
	done        chan struct{}
	once        sync.Once
	send        func(frame []byte) error
	// try, when set, writes a small message without blocking (tryBeat;
	// transport.TrySender).
	try     func(msg []byte) (bool, error)
	onError func(error)
	// maxBatch bounds a batch's encoded bytes (the peer's receive limit, at
	// most 1 MiB) so one batch never exceeds what the peer accepts.
	maxBatch int
	// closer, when set, runs once the loop has ended (the outbound pipe's
	// connection is closed only after the last frame went out).
	closer func()
}

func newWriter(hwm int, send func([]byte) error, onError func(error)) *writer {
	w := &writer{
		hwm:      hwm,
		ctlMax:   hwm + 256,
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		send:     send,
		onError:  onError,
		maxBatch: 1 << 20,
		wake:     make(chan struct{}, 1),
	}
	w.runFn = w.run
	return w
}

// stopped reports whether stop was called (a non-blocking receive: no lock).
func (w *writer) stopped() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}

// submit queues a request or send; ErrBusy when the data lane is full.
func (w *writer) submit(e wire.Envelope) error {
	if w.stopped() {
		return zerr.ErrPeerLost
	}
	w.mu.Lock()
	if len(w.data) >= w.hwm {
		w.mu.Unlock()
		return errSendQueueFull
	}
	w.data = append(w.data, e)
	wake, parked := w.idle, w.parked
	w.idle, w.parked = false, false
	w.mu.Unlock()
	if wake {
		w.signal(parked)
	}
	return nil
}

// control queues a reply, error, heartbeat or handshake frame. A full
// control lane closes the pipe (errSlowPeer).
func (w *writer) control(it outItem) error {
	if w.stopped() {
		return zerr.ErrPeerLost
	}
	return w.queueControl(&it)
}

func (w *writer) queueControl(it *outItem) error {
	w.mu.Lock()
	if len(w.ctl) >= w.ctlMax {
		w.mu.Unlock()
		w.onError(errSlowPeer)
		return errSlowPeer
	}
	w.ctl = append(w.ctl, *it)
	wake, parked := w.idle, w.parked
	w.idle, w.parked = false, false
	w.mu.Unlock()
	if wake {
		w.signal(parked)
	}
	return nil
}

// controlReply queues a Reply envelope as control does. It reports false,
// queueing nothing, when the envelope is over limit (the caller then
// answers with the error instead).
func (w *writer) controlReply(corr uint64, payload []byte, headroom map[string]uint32, limit uint64) bool {
	var it outItem
	it.env.Kind, it.env.Corr, it.env.Payload, it.env.Headroom = wire.KindReply, corr, payload, headroom
	if wire.CheckLimit(it.env.Size(), limit) != nil {
		return false
	}
	if !w.stopped() {
		_ = w.queueControl(&it)
	}
	return true
}

// stop makes the loop flush the control lane, run closer and end; an
// idle writer gets a loop to do it.
func (w *writer) stop() {
	w.once.Do(func() {
		close(w.quit)
		w.mu.Lock()
		start := w.idle && !w.parked // a parked loop wakes on quit
		w.idle = w.idle && w.parked
		w.mu.Unlock()
		if start && !w.start() {
			w.finish() // the node stopped: on the caller's goroutine
		}
	})
}

// signal wakes the lingering loop of a writer that was idle, or starts one
// (the caller found it idle and cleared the flags under mu).
func (w *writer) signal(parked bool) {
	if parked {
		w.wake <- struct{}{} // never blocks: one signal per park
		return
	}
	if !w.start() {
		w.mu.Lock()
		w.idle = true // nobody runs: stop (or the next caller) sees it
		w.mu.Unlock()
	}
}

func (w *writer) start() bool {
	if w.spawn != nil {
		return w.spawn()
	}
	go w.runFn()
	return true
}

// loopState is what the loop keeps between runs: the batcher (the items
// taken from the lanes and not yet sent, the batch, the batching
// heuristics) and the frame buffer.
type loopState struct {
	b   batcher
	buf []byte
	// linger times the wait of an idle loop before it ends (made once).
	linger *time.Timer
}

// writerLinger is how long an idle loop waits for more before its
// goroutine ends: a busy pipe's loop is woken, not started again, while a
// pipe at rest (a heartbeat every Interval) holds no writer goroutine most
// of the time.
const writerLinger = 100 * time.Millisecond

// trimLocked gives up what a burst grew, when the loop ends after its
// linger (w.mu held; the lanes are empty): a pipe that went quiet keeps a
// few items of lanes and batch and a small frame buffer.
func (w *writer) trimLocked() {
	if cap(w.data) > maxKeptLane {
		w.data = nil
	}
	if cap(w.ctl) > maxKeptLane {
		w.ctl = nil
	}
	w.lp.b.trim(maxKeptLane)
	if cap(w.lp.buf) > maxKeptBuf {
		w.lp.buf = nil
	}
}

// lingerWait parks the idle loop (idle and parked are set) for at most
// writerLinger. It reports true when a caller (or stop) woke it: the loop
// goes on; false when it timed out with nobody waking it: the loop ends
// (idle stays set, so the next caller starts one).
func (w *writer) lingerWait() bool {
	lp := &w.lp
	if lp.linger == nil {
		lp.linger = time.NewTimer(writerLinger)
	} else {
		lp.linger.Reset(writerLinger)
	}
	select {
	case <-w.wake:
		lp.linger.Stop()
		return true
	case <-w.quit:
		lp.linger.Stop()
		w.mu.Lock()
		w.idle, w.parked = false, false
		w.mu.Unlock()
		return true
	case <-lp.linger.C:
		return w.unpark()
	}
}

// unpark ends the park of an idle loop that nobody woke (its linger
// passed, or it sent only heartbeats and does not linger). It reports
// false when the loop ends (idle stays set, so the next caller starts
// one), true when it must go on: stop saw the parked loop, or a caller
// cleared parked just now and is about to signal.
func (w *writer) unpark() bool {
	w.mu.Lock()
	if w.stopped() { // stop saw a parked loop: this one finishes
		w.idle, w.parked = false, false
		w.mu.Unlock()
		return true
	}
	if w.parked {
		w.trimLocked()
		w.parked = false
		w.mu.Unlock()
		return false
	}
	w.mu.Unlock()
	select {
	case <-w.wake:
	case <-w.quit:
	}
	return true
}

// maxKeptLane is the largest lane or batch slice (in items) a writer
// keeps once it went quiet (an envelope is about 160 bytes).
const maxKeptLane = 64

// maxKeptBuf is the largest frame buffer an idle writer keeps.
const maxKeptBuf = 4 << 10

// run is the writer loop. It returns when the lanes are empty (the writer
// is then idle: the next caller starts it again), when stopped, or when a
// send fails; in the last two cases it first flushes what the control
// lane holds (a Reject or a goodbye queued just before the stop), then
// runs closer.
func (w *writer) run() {
	idle := false
	defer func() {
		if !idle { // stopped, failed, or panicking
			w.finish()
		}
	}()
	idle = w.loop()
}

// finish ends the writer for good: a failed send's later submits fail
// fast, closer runs, done closes.
func (w *writer) finish() {
	defer close(w.done)
	w.stop()
	if w.closer != nil {
		w.closer()
	}
}

// loop sends until the lanes are empty (true: the writer went idle) or it
// is stopped or a send fails (false). What goes into each write is the
// batcher's decision; the loop takes the lanes, yields, encodes and writes.
func (w *writer) loop() (idle bool) {
	b := &w.lp.b
	beatsOnly := true // everything this run sent was heartbeats
	for {
		if w.stopped() {
			w.flushControl(b.unsentControl())
			return false
		}
		if got, parked := w.take(true); !got {
			if !parked {
				continue // stopped: flush and finish
			}
			if w.rest(beatsOnly) {
				beatsOnly = false
				continue
			}
			return true // nothing of lp may be touched from here on
		}
		if f := b.frame(); f != nil {
			if !w.write(f) {
				return false
			}
			continue
		}
		b.open(w.maxBatch)
		for b.fill() {
			if got, _ := w.take(false); got {
				continue
			}
			if !b.yield() {
				break
			}
			// Let callers that are about to submit run once before the
			// batch is sealed (the batcher says when).
			runtime.Gosched()
		}
		batch := b.seal()
		beatsOnly = beatsOnly && heartbeatsOnly(batch)
		if len(batch) > 0 && !w.writeBatch(batch) {
			return false
		}
	}
}

// rest parks the idle loop: it lingers for writerLinger, except after a
// run that sent only heartbeats — a pipe at rest beats once an Interval,
// so its loop ends at once instead of arming a timer that would fire for
// nothing. It reports whether the loop goes on (see lingerWait).
func (w *writer) rest(beatsOnly bool) bool {
	if beatsOnly {
		return w.unpark()
	}
	return w.lingerWait()
}

// heartbeatsOnly reports whether every envelope of batch is a heartbeat.
func heartbeatsOnly(batch []wire.Envelope) bool {
	for i := range batch {
		if batch[i].Kind != wire.KindHeartbeat {
			return false
		}
	}
	return true
}

// take hands the batcher what the lanes queued, swapping the slices with
// its drained ones, unless it still holds items; got reports whether it
// holds any now. With idle set, an empty take marks the writer idle and
// parked (parked: the loop then lingers, and ends — giving up what a
// burst grew — if nobody wakes it), unless it is stopped: stop saw the
// loop running, so this loop must finish.
func (w *writer) take(idle bool) (got, parked bool) {
	b := &w.lp.b
	if b.held() {
		return true, false
	}
	w.mu.Lock()
	w.data, w.ctl = b.refill(w.data, w.ctl)
	got = b.held()
	if !got && idle && !w.stopped() {
		w.idle, w.parked = true, true
		parked = true
	}
	w.mu.Unlock()
	return got, parked
}

// writeBatch encodes a sealed batch into the frame buffer and writes it.
func (w *writer) writeBatch(batch []wire.Envelope) bool {
	lp := &w.lp
	var err error
	lp.buf, err = wire.AppendFrame(lp.buf[:0], &wire.Frame{Type: wire.FrameBatch, Batch: batch})
	lp.b.sent() // drop payload references
	if err != nil {
		w.onError(err)
		return false
	}
	// The transport is done with the buffer when Send returns; a very
	// large one is not kept.
	ok := w.write(lp.buf)
	if cap(lp.buf) > 2<<20 {
		lp.buf = nil
	}
	return ok
}

// flushControl sends, best effort, what the control lane still holds:
// held (taken but not sent), then what is queued; at most 64 items.
func (w *writer) flushControl(held []outItem) {
	w.mu.Lock()
	items := append(held[:len(held):len(held)], w.ctl...)
	w.ctl = nil
	w.mu.Unlock()
	if len(items) > 64 {
		items = items[:64]
	}
	var batch []wire.Envelope
	for _, it := range items {
		if it.frame != nil {
			if !w.write(it.frame) {
				return
			}
			continue
		}
		batch = append(batch, it.env)
	}
	if len(batch) > 0 {
		if b, err := wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameBatch, Batch: batch}); err == nil {
			_ = w.send(b)
		}
	}
}

func (w *writer) write(frame []byte) bool {
	if err := w.send(frame); err != nil {
		w.onError(err)
		return false
	}
	return true
}
