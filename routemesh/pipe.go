package routemesh

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/handshake"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// pipeState is where a pipe is in its life.
type pipeState uint32

const (
	pipeHandshake pipeState = 1 + iota // frames go to the mesh actor
	pipeReady                          // frames are dispatched by the reader
	pipeClosed                         // frames are dropped
)

// errSlowPeer closes a pipe whose reply/control lane overflowed: the peer
// reads so slowly that it can no longer receive answers.
var errSlowPeer = errors.New("zlink: peer too slow to take its replies")

// outItem is one thing a writer sends: an envelope (batched) or a raw
// handshake frame (sent alone, in order).
type outItem struct {
	env   wire.Envelope
	frame []byte
}

// pipe is one physical connection to a peer: an outbound connection we
// dialed (a DEALER of its own), or an inbound identity on our listener (the
// ROUTER). Its identity (the dialer's socket
// identity) is unique: RID + generation + a nonce, so duplicate pipes between
// two nodes never share an identity.
type pipe struct {
	id       string
	outbound bool
	intent   *intent        // outbound only
	conn     transport.Conn // outbound only
	node     *Node
	w        *writer
	state    atomic.Uint32 // pipeState
	lastRead atomic.Int64  // unix nanos of the last frame read
	live     *pipeLive     // liveness; set before the pipe is ready

	// set by the mesh actor during the handshake, read-only once ready
	remote     wire.Identity
	hello      *wire.Hello
	welcome    *wire.Welcome
	myNonce    [16]byte
	theirNonce [16]byte
	started    time.Time
	link       *link
	hs         *handshake.Machine // the handshake; mesh actor only
	hsTimer    bool               // a handshake timeout is armed

	closeOnce sync.Once
	closed    chan struct{}
}

func (p *pipe) getState() pipeState { return pipeState(p.state.Load()) }

// sendFrame queues a raw frame (handshake) behind whatever is queued.
func (p *pipe) sendFrame(f *wire.Frame) error {
	b, err := wire.AppendFrame(nil, f)
	if err != nil {
		return err
	}
	return p.w.control(outItem{frame: b})
}

// close stops the pipe's writer and (outbound) its socket. Idempotent.
func (p *pipe) close() {
	p.closeOnce.Do(func() {
		p.state.Store(uint32(pipeClosed))
		close(p.closed)
		switch {
		case p.w != nil:
			p.w.stop() // the writer closes the connection after its last frame
		case p.conn != nil:
			_ = p.conn.Close()
		}
	})
}

// writer is a pipe's outbound queue and batching loop. The data lane holds
// requests and sends (bounded by SendHWM: a full lane is ErrBusy for the
// caller); the control lane holds replies, errors, heartbeats and handshake
// frames (bounded too: overflowing it means the peer cannot keep up, and the
// pipe is closed). The loop drains both lanes into one Batch frame per write,
// with no artificial delay.
//
// The lanes are slices under one mutex, not channels: a caller appends
// (one uncontended lock), and the loop takes everything queued at once by
// swapping the slices with the ones it has sent — one lock per batch
// instead of a channel receive, contending with the callers, per envelope.
// The lanes hold no memory before the first envelope, and a loop that goes
// idle gives up slices grown large by a burst.
type writer struct {
	mu   sync.Mutex
	data []wire.Envelope // queued requests and sends (at most hwm)
	ctl  []outItem       // queued control items (at most ctlMax), in order
	idle bool            // the loop waits on wake; the next caller wakes it

	hwm, ctlMax int
	wake        chan struct{} // buffered 1
	quit        chan struct{}
	done        chan struct{}
	once        sync.Once
	send        func(frame []byte) error
	onError     func(error)
	// maxBatch bounds a batch's encoded bytes (the peer's receive limit, at
	// most 1 MiB) so one batch never exceeds what the peer accepts.
	maxBatch int
	// closer, when set, runs once the loop has ended (the outbound pipe's
	// connection is closed only after the last frame went out).
	closer func()
}

func newWriter(hwm int, send func([]byte) error, onError func(error)) *writer {
	return &writer{
		hwm:      hwm,
		ctlMax:   hwm + 256,
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		send:     send,
		onError:  onError,
		maxBatch: 1 << 20,
	}
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

// signal wakes the loop after a caller queued into an idle writer.
func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// submit queues a request or send; ErrBusy when the data lane is full.
func (w *writer) submit(e wire.Envelope) error {
	if w.stopped() {
		return wire.ErrPeerLost
	}
	w.mu.Lock()
	if len(w.data) >= w.hwm {
		w.mu.Unlock()
		return errSendQueueFull
	}
	w.data = append(w.data, e)
	wake := w.idle
	w.idle = false
	w.mu.Unlock()
	if wake {
		w.signal()
	}
	return nil
}

// control queues a reply, error, heartbeat or handshake frame. A full
// control lane closes the pipe (errSlowPeer).
func (w *writer) control(it outItem) error {
	if w.stopped() {
		return wire.ErrPeerLost
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
	wake := w.idle
	w.idle = false
	w.mu.Unlock()
	if wake {
		w.signal()
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

func (w *writer) stop() { w.once.Do(func() { close(w.quit) }) }

// quietProbe: a quiet writer still yields before one batch in this many.
const quietProbe = 8

// maxKeptLane is the largest lane slice (in items) an idle writer keeps.
const maxKeptLane = 1024

// run is the writer loop; it returns when stopped or when a send fails.
// When stopped it first flushes what the control lane holds (a Reject or a
// goodbye queued just before the stop), then runs closer.
func (w *writer) run() {
	defer close(w.done)
	defer w.stop() // after a send failure, new submits fail fast
	defer func() {
		if w.closer != nil {
			w.closer()
		}
	}()
	var (
		batch = make([]wire.Envelope, 0, 256)
		buf   []byte
		// The items taken from the lanes and not yet sent: ctl[ci:] and
		// data[di:]. Sent items are cleared (no payload stays referenced).
		data   []wire.Envelope
		ctl    []outItem
		di, ci int
		// quiet: the last yield before sealing a batch brought no other
		// envelope, and no batch since held more than one.
		quiet bool
		probe int // batches since the last probing yield, mod quietProbe
	)
	// take swaps the drained slices for the queued ones; it reports
	// whether anything was taken. With idle set, an empty take marks the
	// loop idle (it then waits on wake).
	take := func(idle bool) bool {
		if di < len(data) || ci < len(ctl) {
			return true
		}
		data, ctl = data[:0], ctl[:0]
		w.mu.Lock()
		data, w.data = w.data, data
		ctl, w.ctl = w.ctl, ctl
		got := len(data) > 0 || len(ctl) > 0
		if !got && idle {
			w.idle = true
			// Going idle: give up what a burst grew (the queues are empty).
			if cap(w.data) > maxKeptLane {
				w.data = nil
			}
			if cap(w.ctl) > maxKeptLane {
				w.ctl = nil
			}
		}
		w.mu.Unlock()
		di, ci = 0, 0
		if !got && idle {
			if cap(data) > maxKeptLane {
				data = nil
			}
			if cap(ctl) > maxKeptLane {
				ctl = nil
			}
			if cap(batch) > 4*maxKeptLane {
				batch = make([]wire.Envelope, 0, 256)
			}
		}
		return got
	}
	for {
		if w.stopped() {
			w.flushControl(ctl[ci:])
			return
		}
		if !take(true) {
			select {
			case <-w.quit:
			case <-w.wake:
			}
			continue
		}
		// A raw frame first in line goes alone, in its lane's order.
		if ci < len(ctl) && ctl[ci].frame != nil {
			f := ctl[ci].frame
			ctl[ci] = outItem{}
			ci++
			if !w.write(f) {
				return
			}
			continue
		}
		batch = batch[:0]
		size := 0
		yielded := false
	fill:
		for len(batch) < 4096 {
			switch {
			case ci < len(ctl):
				it := &ctl[ci]
				if it.frame != nil {
					break fill // the batch goes before the frame
				}
				es := it.env.Size()
				if len(batch) > 0 && size+es > w.maxBatch {
					break fill
				}
				batch = append(batch, it.env)
				size += es
				*it = outItem{}
				ci++
			case di < len(data):
				e := &data[di]
				es := e.Size()
				if len(batch) > 0 && size+es > w.maxBatch {
					break fill
				}
				batch = append(batch, *e)
				size += es
				*e = wire.Envelope{}
				di++
			default:
				if take(false) {
					continue
				}
				// Let callers that are about to submit run once before the
				// batch is sealed: on a busy node this turns many small
				// frames into one, at the cost of one scheduler pass. Not
				// on a quiet pipe (the last pass brought nothing: a caller
				// waits for each answer), where the pass only delays the
				// frame — except one batch in quietProbe, to notice load.
				if !yielded && len(batch) < 16 && (!quiet || probe == 0) {
					yielded = true
					runtime.Gosched()
					continue
				}
				break fill
			}
		}
		if len(batch) == 0 {
			continue
		}
		if yielded {
			quiet = len(batch) == 1
		} else if len(batch) > 1 {
			quiet = false
		}
		probe = (probe + 1) % quietProbe
		var err error
		buf, err = wire.AppendFrame(buf[:0], &wire.Frame{Type: wire.FrameBatch, Batch: batch})
		clear(batch) // drop payload references
		if err != nil {
			w.onError(err)
			return
		}
		// The transport is done with the buffer when Send returns; a very
		// large one is not kept.
		ok := w.write(buf)
		if cap(buf) > 2<<20 {
			buf = nil
		}
		if !ok {
			return
		}
	}
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
