package routemesh

import (
	"testing"
	"time"

	"github.com/zlink-go/zlink/wire"
)

// A writer whose run sent only heartbeats (a pipe at rest) ends at once
// instead of lingering: it arms no linger timer. A run that sent anything
// else lingers as before, so a busy pipe's loop is woken, not restarted.
func TestWriter_EndsAtOnceAfterOnlyHeartbeats(t *testing.T) {
	sent := make(chan wire.Kind, 16)
	w := newWriter(16, func(b []byte) error {
		f, err := wire.DecodeFrame(b)
		if err != nil {
			t.Error(err)
			return nil
		}
		for _, e := range f.Batch {
			sent <- e.Kind
		}
		return nil
	}, func(err error) { t.Error(err) })
	ended := make(chan struct{}, 4)
	w.spawn = func() bool {
		go func() { w.run(); ended <- struct{}{} }()
		return true
	}
	w.mu.Lock()
	w.idle = true // as after a run that found nothing to send
	w.mu.Unlock()

	for range 3 {
		if err := w.control(outItem{env: wire.Envelope{Kind: wire.KindHeartbeat, Seq: 1}}); err != nil {
			t.Fatal(err)
		}
		if k := <-sent; k != wire.KindHeartbeat {
			t.Fatalf("sent %v, want a heartbeat", k)
		}
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the writer's run did not end after sending a heartbeat")
		}
		if w.lp.linger != nil {
			t.Fatal("a run that sent only a heartbeat armed the linger timer")
		}
	}

	if err := w.submit(wire.Envelope{Kind: wire.KindRequest, Corr: 1}); err != nil {
		t.Fatal(err)
	}
	if k := <-sent; k != wire.KindRequest {
		t.Fatalf("sent %v, want the request", k)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer's run did not end after its linger")
	}
	if w.lp.linger == nil {
		t.Fatal("a run that sent a request ended without lingering")
	}
	w.stop()
	<-w.done
}
