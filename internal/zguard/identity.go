package zguard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// claim makes c the live conn of identity, unless another live conn has it.
func (l *listener) claim(identity string, c *conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, ok := l.live[identity]; ok && other != c {
		return ErrDuplicateIdentity
	}
	l.live[identity] = c
	return nil
}

// identify returns c's identity and claims it among the live connections:
// the one its READY announced, or for an empty one a generated one (as
// libzmq's ROUTER does: a zero byte and a 32-bit counter starting at a
// random value; a peer cannot choose one that is live, it is refused). A
// conn identified before (identifyAhead) keeps its identity. An identity a
// live connection holds is an error matching ErrDuplicateIdentity.
func (l *listener) identify(c *conn, announced string) (string, error) {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	if announced != "" {
		err := l.claim(announced, c)
		c.mu.Lock()
		c.identity = announced // kept for ConnEvent even when refused
		c.mu.Unlock()
		if err != nil {
			return "", fmt.Errorf("%w: %.64q", err, announced)
		}
		return announced, nil
	}
	for {
		var g [5]byte
		binary.BigEndian.PutUint32(g[1:], l.nextID.Add(1))
		if l.claim(string(g[:]), c) == nil {
			c.mu.Lock()
			c.identity = string(g[:])
			c.mu.Unlock()
			return string(g[:]), nil
		}
	}
}

// identifyAhead gives c its identity from the READY read ahead, before
// zmq4 sees the connection (identify); it reports whether c goes on. A
// malformed READY is refused as Read would refuse it. A peer whose
// identity a live connection holds is told so with a ZMTP ERROR command
// (errDuplicateReason) before the close: zmq4 has not sent its READY yet,
// so the peer's handshake fails (libzmq reports
// ZMQ_EVENT_HANDSHAKE_FAILED_AUTH with status 300 to its socket monitor).
func (l *listener) identifyAhead(c *conn, ready []byte) bool {
	name, identity, err := sniffCommand(ready)
	if err != nil {
		c.reject(err)
		return false
	}
	if name != "READY" {
		return true // zmq4 refuses it
	}
	if _, err := l.identifyWaiting(c, identity); err != nil {
		if !errors.Is(err, ErrDuplicateIdentity) {
			c.reject(err)
			return false
		}
		c.wmu.Lock()
		if c.werr == nil {
			_, _ = c.writeLocked(errorCommand(errDuplicateReason))
		}
		c.wmu.Unlock()
		c.reject(err)
		return false
	}
	return true
}

// errDuplicateReason is the reason of the ZMTP ERROR command that refuses
// an identity a live connection holds: ZAP's status code for a temporary
// error (RFC 27), which libzmq reports as an authentication failure with
// that status; the identity may be free again later.
const errDuplicateReason = "300"

// errorCommand is a ZMTP ERROR command frame with reason (≤ 255 bytes).
func errorCommand(reason string) []byte {
	body := append([]byte("\x05ERROR"), byte(len(reason)))
	body = append(body, reason...)
	return append([]byte{flagCommand, byte(len(body))}, body...)
}

// identifyWaiting is identify for a conn in its pre-handshake. While
// another conn holds the identity it waits for it to be let go, at most
// half the handshake timeout: a peer that reconnects at once with the same
// identity comes before its old connection's close was read, or before
// the owner let a closed one go (forget). A holder still there then is an
// error matching ErrDuplicateIdentity.
func (l *listener) identifyWaiting(c *conn, announced string) (string, error) {
	t := time.NewTimer(time.Until(c.deadline.Add(-c.cfg.HandshakeTimeout / 2)))
	defer t.Stop()
	for {
		released := l.releasedCh()
		id, err := l.identify(c, announced)
		if err == nil || !errors.Is(err, ErrDuplicateIdentity) {
			return id, err
		}
		select {
		case <-released:
			c.mu.Lock()
			c.identity = "" // not claimed: identify tries again
			c.mu.Unlock()
		case <-t.C:
			return "", err
		case <-c.closedCh:
			return "", ErrClosedLocally
		case <-l.done:
			return "", ErrClosedLocally
		}
	}
}

// releasedCh is closed when an identity is next let go.
func (l *listener) releasedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// forget drops every trace of the closed conn c, except one: the identity
// of a conn that delivered messages to its owner (direct reads) stays
// held until the owner lets it go (Inbound.Disconnect), at most
// AuthTimeout (with AwaitAuth, a conn not authenticated only while fewer
// than MaxPendingHandshakes such are held). The owner keys its state by identity: a new connection
// that reused the identity at once would otherwise have its first
// message taken for the old connection's, and the owner's Disconnect of
// the old one would close it. Meanwhile a new connection claiming it is
// refused as a duplicate (ERROR 300: libzmq retries).
func (l *listener) forget(c *conn, identity string) {
	l.mu.Lock()
	if _, ok := l.pending[c]; ok {
		delete(l.pending, c)
		l.book.release(c.src, c.known)
	}
	hold := false
	if identity != "" && l.live[identity] == c {
		hold = c.direct && c.spoke.Load() && !l.closed
		if hold && c.cfg.AwaitAuth && !c.authed.Load() {
			// Not authenticated: held only while few are, so strangers
			// that connect, speak and leave cannot grow the map.
			if hold = len(l.heldStrangers) < c.cfg.MaxPendingHandshakes; hold {
				l.heldStrangers[c] = struct{}{}
			}
		}
		if !hold {
			l.dropLocked(identity)
		}
	}
	l.mu.Unlock()
	if hold {
		time.AfterFunc(l.cfg.AuthTimeout, func() { l.release(identity, c) })
	}
}

// release lets identity go if the closed conn c still holds it (forget),
// and wakes the conns waiting for it (identifyWaiting).
func (l *listener) release(identity string, c *conn) {
	l.mu.Lock()
	if l.live[identity] == c {
		l.dropLocked(identity)
		delete(l.heldStrangers, c)
	}
	l.mu.Unlock()
}

// dropLocked lets identity go and wakes the conns waiting for it
// (identifyWaiting). l.mu is held.
func (l *listener) dropLocked(identity string) {
	delete(l.live, identity)
	close(l.released)
	l.released = make(chan struct{})
}
