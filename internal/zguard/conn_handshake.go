package zguard

import (
	"time"
)

// handshakeExpired closes a conn whose handshake has not ended by its
// deadline.
func (c *conn) handshakeExpired() {
	if !c.handshakeDone.Load() {
		c.reject(ErrHandshakeTimeout)
	}
}

// onHandshakeCommand runs on every command read before the handshake ends.
func (c *conn) onHandshakeCommand(body []byte) error {
	name, identity, err := sniffCommand(body)
	if err != nil {
		return err
	}
	if name != "READY" && name != "INITIATE" {
		return nil
	}
	if c.ln != nil {
		if _, err := c.ln.identify(c, identity); err != nil {
			return err
		}
	} else {
		c.mu.Lock()
		c.identity = identity
		c.mu.Unlock()
	}
	c.handshakeDone.Store(true)
	c.rp.capture = false
	c.rp.body = nil
	_ = c.raw.SetReadDeadline(time.Time{})
	if c.ln != nil && !c.cfg.AwaitAuth {
		c.ln.handshakeEnded(c) // else pending until Inbound.Authenticated
	}
	// zmq4 drops (without closing) a conn whose Open fails after the READY,
	// e.g. on incompatible socket types; such a conn is never read again.
	c.mu.Lock()
	if c.adoptTimer != nil {
		c.adoptTimer.Stop() // handshakeExpired
	}
	if !c.closed {
		c.adoptTimer = time.AfterFunc(c.cfg.HandshakeTimeout, c.orphaned)
		if c.ln != nil && c.cfg.SpeakFirst {
			c.silentTimer = time.AfterFunc(c.cfg.HandshakeTimeout, c.silent)
		}
	}
	c.mu.Unlock()
	return nil
}

// silent refuses an accepted conn that sent no message within the
// handshake timeout of its READY: a stranger that connects and says
// nothing holds no connection for long.
func (c *conn) silent() {
	if !c.spoke.Load() {
		c.reject(ErrSilent)
	}
}

// authExpired refuses an accepted conn (AwaitAuth) that its owner has not
// reported authenticated within AuthTimeout of its accept.
func (c *conn) authExpired() {
	if !c.authed.Load() {
		c.reject(ErrNotAuthenticated)
	}
}

// authenticate ends the wait for authentication (Inbound.Authenticated).
func (c *conn) authenticate() {
	c.authed.Store(true)
	c.mu.Lock()
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	c.mu.Unlock()
}

// adopt records that zmq4 reads the conn after its handshake.
func (c *conn) adopt() {
	c.adopted.Store(true)
	c.mu.Lock()
	if c.adoptTimer != nil {
		c.adoptTimer.Stop()
	}
	c.mu.Unlock()
}

func (c *conn) orphaned() {
	if !c.adopted.Load() {
		c.reject(ErrHandshakeTimeout)
	}
}
