package zguard

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
)

// Direct sends and reads. zmq4 sends every message through a new
// goroutine and, on a ROUTER, under one socket-wide mutex held for the
// whole write: one peer that stops reading blocks the sends to every other
// peer until its write deadline fails it. A direct send writes one whole
// ZMTP message on the caller's goroutine straight to the guarded
// connection of one peer, under that connection's own write lock and
// deadline: a stuck peer holds up only the goroutine writing to it, and no
// goroutine is started per send.
//
// It is safe because zmq4 writes nothing to a ROUTER's or DEALER's
// connection once its handshake is over, unless the peer sends a PING
// (zmq4 answers PONG); the write parser sees every byte either side
// writes, so a direct send refuses to start inside a message of zmq4's
// (ErrMidMessage) instead of interleaving with it. Use direct sends only
// after the handshake: on a listener's connection once a message came from
// its identity, on a dialed one once zmq4's Dial returned.
//
// Reads are direct too. zmq4's reader would take each message on a
// goroutine of its own, allocate it as a multi-frame message and hand it
// over through a channel. On a dialed connection (Outbound) zmq4's reader
// is parked in Read once the handshake is over, until the connection
// closes, and Outbound.Recv reads each message straight from the guarded
// connection on the caller's goroutine. On a listener's connections
// (Inbound.ReadDirect) the goroutine zmq4 started to read each one reads
// its messages itself (pumpInbound) into the Inbound's queue. Both check
// every frame header against the limit before allocating its body.

// writeMessage writes frame as one whole ZMTP message (a single data frame
// without MORE) and flushes it.
func (c *conn) writeMessage(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	hdr := &c.whdr // the header a local would be moved to the heap for
	n := 2
	if len(frame) > 255 {
		hdr[0] = flagLong
		binary.BigEndian.PutUint64(hdr[1:], uint64(len(frame)))
		n = maxHeaderLen
	} else {
		hdr[0], hdr[1] = 0, byte(len(frame))
	}
	if c.werr != nil {
		return c.werr
	}
	if !c.wp.atHeader() || c.wp.more() && !c.wp.command() {
		return c.failWrite(ErrMidMessage)
	}
	if _, err := c.writeLocked(hdr[:n]); err != nil {
		return err
	}
	_, err := c.writeLocked(frame)
	return err
}

// Send writes frame as one message to the inbound connection key names
// (ConnKey; what a ROUTER's Send does, without the socket-wide lock). It
// reports ErrNotConnected when that connection is not live (closed, or
// its identity taken by another since), and the connection's write error
// (it is then closed).
func (in *Inbound) Send(key, frame []byte) error {
	if _, c := in.keyed(key); c != nil {
		return c.writeMessage(frame)
	}
	return errNotConnected()
}

func errNotConnected() error { return &net.OpError{Op: "write", Net: Scheme, Err: ErrNotConnected} }

// Outbound is filled by the dials made with the Config holding it: through
// it the dialing socket's owner sends directly on the dialed connection.
// One Outbound serves one socket that dials one endpoint once (a DEALER
// per peer connection, zmq4's redials off); after a second dial it holds
// the latest connection.
type Outbound struct {
	mu sync.Mutex
	c  *conn
}

func (o *Outbound) set(c *conn) {
	o.mu.Lock()
	o.c = c
	o.mu.Unlock()
}

// Send writes frame as one message to the dialed connection (what a
// DEALER's Send does, without a goroutine per send). It reports
// ErrNotConnected before a dial succeeded, and the connection's write
// error (it is then closed).
func (o *Outbound) Send(frame []byte) error {
	o.mu.Lock()
	c := o.c
	o.mu.Unlock()
	if c == nil {
		return &net.OpError{Op: "write", Net: Scheme, Err: ErrNotConnected}
	}
	return c.writeMessage(frame)
}

// Recv reads the next message from the dialed connection on the caller's
// goroutine (one goroutine at a time). A message of several frames is
// skipped and reported as ErrMultipart (the connection stays usable); ZMTP
// commands are skipped, a PING answered with a PONG. Any other error ends
// the connection: io.EOF when the peer closed it, a guard's error
// (ErrFrameTooLarge) when it broke a limit, or a net error.
func (o *Outbound) Recv() ([]byte, error) {
	o.mu.Lock()
	c := o.c
	o.mu.Unlock()
	if c == nil {
		return nil, &net.OpError{Op: "read", Net: Scheme, Err: ErrNotConnected}
	}
	return c.readMessage()
}

// readMessage reads the next whole single-frame data message. Each frame
// header is checked against the limit before its body is allocated.
func (c *conn) readMessage() ([]byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return nil, c.rerr
	}
	multipart := false
	for {
		if err := c.checkHeader(); err != nil {
			return nil, err
		}
		h, _ := c.br.Peek(1) // checkHeader peeked the whole header
		hl := headerLen(h[0])
		h, _ = c.br.Peek(hl)
		flags := h[0]
		var size uint64
		if hl == 2 {
			size = uint64(h[1])
		} else {
			size = binary.BigEndian.Uint64(h[1:])
		}
		_, _ = c.br.Discard(hl)
		if flags&flagCommand != 0 {
			if err := c.skipCommand(size); err != nil { // answers a PING
				return nil, err
			}
			continue
		}
		if multipart || flags&flagMore != 0 {
			// Not ours: skip the body without keeping it.
			if _, err := c.br.Discard(int(size)); err != nil {
				return nil, c.failRead(err, false)
			}
			multipart = flags&flagMore != 0
			if multipart {
				continue
			}
			return nil, ErrMultipart // its last frame
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(c.br, body); err != nil {
			return nil, c.failRead(err, false)
		}
		return body, nil
	}
}

// Received is one message read directly from an inbound connection.
type Received struct {
	Identity string // the connection's identity (from its READY)
	Key      string // the connection's key (ConnKey)
	Frame    []byte // the message's one frame; nil with Err
	Err      error  // ErrMultipart: a message of several frames, skipped
}

// ReadDirect turns on direct reads for the listeners made with the Config
// holding in, before they listen: after its handshake, each connection's
// messages are read by the goroutine zmq4 started to read it, without
// zmq4's per-message allocations and re-queueing, and queued on Messages
// (at most queue of them; a full queue holds up the connection's reads, as
// zmq4's own queue does).
func (in *Inbound) ReadDirect(queue int) { in.msgs = make(chan Received, queue) }

// ReadDirectFunc is ReadDirect without the queue: each connection's
// reader goroutine hands each message to fn itself, in order, and waits
// for it to return (a slow fn holds up that connection's reads only).
// Messages stays nil. Call it before the listeners listen.
func (in *Inbound) ReadDirectFunc(fn func(Received)) { in.fn = fn }

// Messages is where direct reads deliver (nil without ReadDirect). A
// connection's messages arrive in order.
func (in *Inbound) Messages() <-chan Received { return in.msgs }

// pumpInbound reads c's messages into its Inbound's queue until c ends,
// and returns the error that ended it.
func (c *conn) pumpInbound() error {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	key := ConnKey(id, c.serial)
	msgs, fn := c.cfg.Inbound.msgs, c.cfg.Inbound.fn
	for {
		frame, err := c.readMessage()
		if err != nil && !errors.Is(err, ErrMultipart) {
			return err
		}
		if !c.spoke.Load() {
			c.spoke.Store(true) // the first message: it is not silent
		}
		if fn != nil {
			fn(Received{Identity: id, Key: key, Frame: frame, Err: err})
			continue
		}
		select {
		case msgs <- Received{Identity: id, Key: key, Frame: frame, Err: err}:
		case <-c.closedCh:
			return opError("read", c, net.ErrClosed)
		}
	}
}

// Writes that never block. A node at rest writes one small heartbeat per
// peer connection each liveness interval; writing it on the goroutine
// that decides it is due, when the socket takes it at once, spares a
// goroutine start per heartbeat. The kernel takes a small message at once
// unless the socket's send buffer is full — a peer that does not read —
// and then the caller queues it for its blocking writer as before.

// tryWriteMessage writes msg — one whole single-frame ZMTP message whose
// first two bytes are left for its short header, at most 255 bytes of
// body — without blocking. sent reports that it went out, or that what
// the kernel did not take is buffered and flushed by a goroutine of its
// own (under the write lock: later writes go out after it). sent false
// with a nil error: nothing was written, the caller writes msg the
// blocking way (TLS, a message of zmq4's under way, a full send buffer,
// bytes buffered, another write under way). An error is the connection's
// write error (it is then closed).
func (c *conn) tryWriteMessage(msg []byte) (sent bool, err error) {
	if c.rc == nil || len(msg) < 2 || len(msg)-2 > 255 {
		return false, nil
	}
	msg[0], msg[1] = 0, byte(len(msg)-2)
	if !c.wmu.TryLock() {
		return false, nil // a write under way may be blocked: never wait for it
	}
	defer c.wmu.Unlock()
	if c.werr != nil {
		return false, c.werr
	}
	if len(c.swallow) > 0 || !c.wp.atHeader() || c.wp.more() && !c.wp.command() || c.bw.buffered() {
		return false, nil
	}
	select {
	case <-c.closedCh:
		return false, nil // the blocking write reports it
	default:
	}
	if err := c.dw.disarm(); err != nil {
		return false, c.failWrite(err)
	}
	c.try.msg = msg
	rerr := c.rc.Write(c.try.fn)
	n, werr := c.try.n, c.try.err
	c.try.msg, c.try.err = nil, nil
	if rerr != nil {
		return false, nil // closed under us: the blocking write reports it
	}
	if werr == syscall.EAGAIN || n <= 0 && werr == nil {
		return false, nil
	}
	if werr != nil {
		return false, c.failWrite(werr)
	}
	for k := 0; k < len(msg); { // the write parser sees every byte written
		m, _, err := c.wp.next(msg[k:])
		if err != nil {
			return false, c.failWrite(err)
		}
		k += m
	}
	if n < len(msg) {
		_, _ = c.bw.Write(msg[n:]) // fits: nothing was buffered
		go c.flushPending()
	}
	return true, nil
}

// tryWrite is a conn's write that never blocks: fn, made once, writes msg
// to the socket and records the result (wmu held; no allocation per
// write).
type tryWrite struct {
	fn  func(fd uintptr) bool
	msg []byte
	n   int
	err error
}

func (t *tryWrite) init() {
	t.fn = func(fd uintptr) bool {
		for {
			t.n, t.err = syscall.Write(int(fd), t.msg)
			if t.err != syscall.EINTR {
				return true // done either way: never wait for the socket here
			}
		}
	}
}

// flushPending writes what a write that never blocks left buffered (a
// send buffer that took part of a message), under the write deadline.
func (c *conn) flushPending() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil || !c.bw.buffered() {
		return
	}
	if err := c.bw.Flush(); err != nil {
		_ = c.failWrite(err)
	}
}

// TrySend writes msg to the dialed connection without blocking (see
// tryWriteMessage for msg's shape and the results). Before a dial
// succeeded it reports false.
func (o *Outbound) TrySend(msg []byte) (bool, error) {
	o.mu.Lock()
	c := o.c
	o.mu.Unlock()
	if c == nil {
		return false, nil
	}
	return c.tryWriteMessage(msg)
}

// TrySend writes msg to the inbound connection key names without
// blocking (see tryWriteMessage for msg's shape and the results). It
// reports false when that connection is not live (Send then reports
// ErrNotConnected).
func (in *Inbound) TrySend(key, msg []byte) (bool, error) {
	if _, c := in.keyed(key); c != nil {
		return c.tryWriteMessage(msg)
	}
	return false, nil
}
