package routemesh

import (
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// The writer's one write outside its loop: a heartbeat the node's beat
// loop writes itself, without blocking, when the writer is idle.

// tryBeat writes the heartbeat hb (a batch of one) on the caller's
// goroutine when no loop runs and nothing is queued, and the socket takes
// it at once: a pipe at rest then starts no goroutine for its heartbeat. The writer is claimed
// (as a running loop would be) for the write: what callers queue meanwhile
// waits, and a loop is started for it after. buf is the caller's encoding
// buffer (kept between calls). done reports that hb was dealt with: sent,
// or the write failed (onError was told); false: queue it with control.
func (w *writer) tryBeat(hb []wire.Envelope, buf *[]byte) (sent, done bool) {
	if w.try == nil || buf == nil {
		return false, false
	}
	w.mu.Lock()
	if !w.idle || w.parked || len(w.ctl) > 0 || len(w.data) > 0 || w.stopped() {
		w.mu.Unlock()
		return false, false
	}
	w.idle = false
	w.mu.Unlock()
	b := append((*buf)[:0], make([]byte, transport.HeaderRoom)...)
	b, err := wire.AppendFrame(b, &wire.Frame{Type: wire.FrameBatch, Batch: hb})
	*buf = b
	if err == nil && len(b)-transport.HeaderRoom <= transport.TryMax {
		sent, err = w.try(b)
	}
	w.mu.Lock()
	more := len(w.ctl) > 0 || len(w.data) > 0 || w.stopped()
	w.idle = !more
	w.mu.Unlock()
	if err != nil {
		w.onError(err)
	}
	if more && !w.start() {
		w.mu.Lock()
		w.idle = true
		w.mu.Unlock()
	}
	return sent, sent || err != nil
}
