package zguard

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
)

var (
	// ErrNotConnected: a direct send found no live connection (the identity
	// is not connected to any listener of the Inbound, or the Outbound's
	// dial has not succeeded or its connection is gone).
	ErrNotConnected = errors.New("zlink: no live zmtp connection")
	// ErrMidMessage: a direct send found the connection in the middle of a
	// message zmq4 is writing (a PONG it answers to a peer's PING, say).
	// The connection is closed: its byte stream can no longer be trusted.
	ErrMidMessage = errors.New("zlink: zmtp connection in the middle of a message")
)

// Direct sends. zmq4 sends every message through a new goroutine and, on a
// ROUTER, under one socket-wide mutex held for the whole write: one peer
// that stops reading blocks the sends to every other peer until its write
// deadline fails it. A direct send writes one whole ZMTP message on the
// caller's goroutine straight to the guarded connection of one peer, under
// that connection's own write lock and deadline: a stuck peer holds up only
// the goroutine writing to it, and no goroutine is started per send.
//
// It is safe because zmq4 writes nothing to a ROUTER's or DEALER's
// connection once its handshake is over, unless the peer sends a PING
// (zmq4 answers PONG); the write parser sees every byte either side
// writes, so a direct send refuses to start inside a message of zmq4's
// (ErrMidMessage) instead of interleaving with it. Use direct sends only
// after the handshake: on a listener's connection once a message came from
// its identity, on a dialed one once zmq4's Dial returned.

// writeMessage writes frame as one whole ZMTP message (a single data frame
// without MORE) and flushes it.
func (c *conn) writeMessage(frame []byte) error {
	var hdr [maxHeaderLen]byte
	n := 2
	if len(frame) > 255 {
		hdr[0] = flagLong
		binary.BigEndian.PutUint64(hdr[1:], uint64(len(frame)))
		n = maxHeaderLen
	} else {
		hdr[1] = byte(len(frame))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
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

// Send writes frame as one message to the inbound connection that
// announced identity (what a ROUTER's Send does, without the socket-wide
// lock). It reports ErrNotConnected when no live connection has the
// identity, and the connection's write error (it is then closed).
func (in *Inbound) Send(identity, frame []byte) error {
	in.mu.Lock()
	ls := in.ls
	in.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		c := l.live[string(identity)]
		l.mu.Unlock()
		if c != nil {
			return c.writeMessage(frame)
		}
	}
	return &net.OpError{Op: "write", Net: Scheme, Err: ErrNotConnected}
}

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
