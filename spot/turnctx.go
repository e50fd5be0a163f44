package spot

import (
	"context"
	"sync"
	"time"
)

// turnCtx is a request turn's context: the caller's deadline under the
// runtime's base context. context.WithDeadline would arm a timer for every
// turn, most of which never wait on their context (an echo, a counter); a
// turnCtx arms it only when something asks for Done (a call the handler
// makes, a select on it), and answers Deadline and Err without it. stop
// ends it as the cancel of context.WithDeadline would.
type turnCtx struct {
	parent   context.Context
	deadline time.Time

	mu      sync.Mutex // a leaf: Done and Err may come from the handler's own goroutines
	inner   context.Context
	cancel  context.CancelFunc
	stopped error // why it ended, when stop came first
}

func (c *turnCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *turnCtx) Value(key any) any { return c.parent.Value(key) }

// Done arms the deadline on first use (a stopped turnCtx's is closed).
func (c *turnCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.stopped != nil {
			c.cancel()
		}
	}
	return c.inner.Done()
}

// Err is what context.WithDeadline's context would say now.
func (c *turnCtx) Err() error {
	c.mu.Lock()
	inner, stopped := c.inner, c.stopped
	c.mu.Unlock()
	switch {
	case stopped != nil:
		return stopped
	case inner != nil:
		return inner.Err()
	}
	return c.now()
}

// now is the error the context has at this moment without a stop.
func (c *turnCtx) now() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// stop ends the context (the turn is over) and frees its timer if one was
// armed.
func (c *turnCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped != nil {
		return
	}
	c.stopped = context.Canceled
	if c.inner != nil {
		if err := c.inner.Err(); err != nil {
			c.stopped = err
		}
		c.cancel()
	} else if err := c.now(); err != nil {
		c.stopped = err
	}
}
