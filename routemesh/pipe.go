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
type writer struct {
	data    chan wire.Envelope
	ctl     chan outItem
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	send    func(frame []byte) error
	onError func(error)
	// maxBatch bounds a batch's encoded bytes (the peer's receive limit, at
	// most 1 MiB) so one batch never exceeds what the peer accepts.
	maxBatch int
	// closer, when set, runs once the loop has ended (the outbound pipe's
	// connection is closed only after the last frame went out).
	closer func()
}

func newWriter(hwm int, send func([]byte) error, onError func(error)) *writer {
	return &writer{
		data:     make(chan wire.Envelope, hwm),
		ctl:      make(chan outItem, hwm+256),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		send:     send,
		onError:  onError,
		maxBatch: 1 << 20,
	}
}

// submit queues a request or send; ErrBusy when the data lane is full.
func (w *writer) submit(e wire.Envelope) error {
	select {
	case <-w.quit:
		return wire.ErrPeerLost
	default:
	}
	select {
	case w.data <- e:
		return nil
	default:
		return errSendQueueFull
	}
}

// control queues a reply, error, heartbeat or handshake frame. A full
// control lane closes the pipe (errSlowPeer).
func (w *writer) control(it outItem) error {
	select {
	case <-w.quit:
		return wire.ErrPeerLost
	default:
	}
	select {
	case w.ctl <- it:
		return nil
	default:
		w.onError(errSlowPeer)
		return errSlowPeer
	}
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
	// control, written out: one copy of the item on this frame.
	select {
	case <-w.quit:
		return true
	default:
	}
	select {
	case w.ctl <- it:
	default:
		w.onError(errSlowPeer)
	}
	return true
}

func (w *writer) stop() { w.once.Do(func() { close(w.quit) }) }

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
		carry outItem // an item that did not fit the previous batch
		has   bool
		turn  bool // which lane the batch fill tries first
	)
	for {
		var first outItem
		if has {
			first, has = carry, false
		} else {
			select {
			case <-w.quit:
				w.flushControl()
				return
			case first = <-w.ctl:
			case e := <-w.data:
				first.env = e
			}
		}
		if first.frame != nil {
			if !w.write(first.frame) {
				return
			}
			continue
		}
		batch = append(batch[:0], first.env)
		size := first.env.Size()
		yielded := false
	fill:
		for len(batch) < 4096 {
			// One non-blocking receive per lane, the lanes in turn: unlike
			// a select over both, an empty lane costs no lock.
			var it outItem
			got := false
			if turn = !turn; turn {
				select {
				case it = <-w.ctl:
					got = true
				default:
					select {
					case it.env = <-w.data:
						got = true
					default:
					}
				}
			} else {
				select {
				case it.env = <-w.data:
					got = true
				default:
					select {
					case it = <-w.ctl:
						got = true
					default:
					}
				}
			}
			if !got {
				// Let callers that are about to submit run once before the
				// batch is sealed: on a busy node this turns many small
				// frames into one, at the cost of one scheduler pass.
				if !yielded && len(batch) < 16 {
					yielded = true
					runtime.Gosched()
					continue
				}
				break fill
			}
			if it.frame != nil {
				carry, has = it, true
				break fill
			}
			es := it.env.Size()
			if size+es > w.maxBatch {
				carry, has = it, true
				break fill
			}
			batch = append(batch, it.env)
			size += es
		}
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

// flushControl sends, best effort, what the control lane still holds.
func (w *writer) flushControl() {
	var batch []wire.Envelope
	for i := 0; i < 64; i++ {
		select {
		case it := <-w.ctl:
			if it.frame != nil {
				if !w.write(it.frame) {
					return
				}
				continue
			}
			batch = append(batch, it.env)
		default:
			i = 64
		}
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
