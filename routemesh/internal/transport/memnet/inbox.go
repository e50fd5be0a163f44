package memnet

import "sync"

// item is one frame in an inbox, with its sender's identity (listener
// inboxes only).
type item struct {
	id, frame []byte
}

// inbox is an unbounded queue with one blocking reader. Pushing never
// blocks, so a sender never waits for a reader (or for the network lock).
type inbox struct {
	mu     sync.Mutex
	q      []item
	err    error // set once closed
	wake   chan struct{}
	closed chan struct{}
}

func newInbox() *inbox {
	return &inbox{wake: make(chan struct{}, 1), closed: make(chan struct{})}
}

// push queues it; after close it is dropped.
func (b *inbox) push(it item) {
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return
	}
	b.q = append(b.q, it)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// pop blocks until an item is queued or the inbox is closed (then it
// returns the close error at once, dropping what is queued: a closed
// connection delivers nothing more).
func (b *inbox) pop() (item, error) {
	for {
		b.mu.Lock()
		if b.err != nil {
			err := b.err
			b.mu.Unlock()
			return item{}, err
		}
		if len(b.q) > 0 {
			it := b.q[0]
			b.q[0] = item{}
			b.q = b.q[1:]
			b.mu.Unlock()
			return it, nil
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-b.closed:
		}
	}
}

// close ends the inbox with err; it reports whether this call closed it.
func (b *inbox) close(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return false
	}
	b.err = err
	b.q = nil
	close(b.closed)
	return true
}
