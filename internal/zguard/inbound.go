package zguard

import "sync"

// Inbound closes inbound connections by identity for the owner of a
// listening socket (zmq4's router has no call for it): a peer the owner
// refused, or one that stopped answering, loses its TCP connection instead
// of holding it until it goes away by itself.
type Inbound struct {
	mu sync.Mutex
	ls []*listener

	// msgs, when made (ReadDirect), carries every message read directly
	// from the listeners' connections.
	msgs chan Received
	// fn, when set (ReadDirectFunc), takes them instead.
	fn func(Received)
}

func (in *Inbound) add(l *listener) {
	in.mu.Lock()
	in.ls = append(in.ls, l)
	in.mu.Unlock()
}

// Authenticated tells the listeners that the inbound connection key
// names (ConnKey) has authenticated (the owner's own handshake above
// ZMTP succeeded): with Config.AwaitAuth it stops counting as pending
// and its source becomes known (see Config.ReservedForKnown). It reports
// whether that connection was found. Safe for concurrent use; it does
// not block.
func (in *Inbound) Authenticated(key string) bool {
	l, c := in.keyed([]byte(key))
	if c == nil {
		return false
	}
	l.authenticated(c)
	return true
}

// authenticated ends c's handshake as the owner's (Authenticated).
func (l *listener) authenticated(c *conn) {
	c.authenticate()
	l.handshakeEnded(c)
}

// lookup finds the inbound connection that holds identity (live, or
// closed and held), and its listener. identity is bytes so that the hot
// path's sends look it up without a copy.
func (in *Inbound) lookup(identity []byte) (*listener, *conn) {
	in.mu.Lock()
	ls := in.ls
	in.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		c := l.live[string(identity)]
		l.mu.Unlock()
		if c != nil {
			return l, c
		}
	}
	return nil, nil
}

// Disconnect closes the inbound connection key names (ConnKey), after
// what was written to it (a refusal) has gone out. It reports whether
// that connection was found.
//
// It also lets the identity go: once a connection that delivered messages
// has closed, its identity stays held until its owner disconnects it (or
// AuthTimeout passes), so a new connection with the same identity waits
// instead of being taken for the old one. A key names one connection
// only: Disconnect never touches a new connection that took the identity.
func (in *Inbound) Disconnect(key string) bool {
	l, c := in.keyed([]byte(key))
	if c == nil {
		return false
	}
	in.disconnect(l, c)
	return true
}

// disconnect closes c and lets its identity go.
func (in *Inbound) disconnect(l *listener, c *conn) {
	c.closeWith(ErrDisconnected, false)
	c.mu.Lock()
	identity := c.identity
	c.mu.Unlock()
	l.release(identity, c)
}
