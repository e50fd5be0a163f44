package routemesh

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// tryRig is an idle writer (no loop running) whose blocking sends go to
// sent and whose writes that never block run try; spawns counts the loops
// started.
type tryRig struct {
	w      *writer
	sent   chan wire.Kind
	spawns atomic.Int32
	errs   chan error
}

func newTryRig(t *testing.T, try func(msg []byte) (bool, error)) *tryRig {
	r := &tryRig{sent: make(chan wire.Kind, 16), errs: make(chan error, 4)}
	r.w = newWriter(16, func(b []byte) error {
		f, err := wire.DecodeFrame(b)
		if err != nil {
			t.Error(err)
			return nil
		}
		for _, e := range f.Batch {
			r.sent <- e.Kind
		}
		return nil
	}, func(err error) { r.errs <- err })
	r.w.try = try
	r.w.spawn = func() bool {
		r.spawns.Add(1)
		go r.w.run()
		return true
	}
	r.w.idle = true // as after a run that found nothing to send
	t.Cleanup(func() {
		r.w.stop()
		<-r.w.done
	})
	return r
}

func (r *tryRig) isIdle() bool {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.idle && !r.w.parked
}

func beatOf(seq uint64) []wire.Envelope {
	return []wire.Envelope{{Kind: wire.KindHeartbeat, Generation: 7, Seq: seq}}
}

// An idle writer's heartbeat is written on the caller's goroutine — one
// whole Batch frame after the transport's header room — and no loop is
// started; the writer is idle again after.
func TestWriter_TryBeatWritesAtOnce(t *testing.T) {
	var got []byte
	r := newTryRig(t, func(msg []byte) (bool, error) {
		got = append(got[:0], msg...)
		return true, nil
	})
	var buf []byte
	sent, done := r.w.tryBeat(beatOf(5), &buf)
	if !sent || !done {
		t.Fatalf("tryBeat = %v, %v; want sent", sent, done)
	}
	f, err := wire.DecodeFrame(got[transport.HeaderRoom:])
	if err != nil || len(f.Batch) != 1 || f.Batch[0].Kind != wire.KindHeartbeat || f.Batch[0].Seq != 5 {
		t.Fatalf("written %x: %v %+v", got, err, f)
	}
	if r.spawns.Load() != 0 {
		t.Fatal("a loop was started for a heartbeat written at once")
	}
	if !r.isIdle() {
		t.Fatal("the writer is not idle after the heartbeat")
	}
}

// The write that never blocks is not tried while anything is queued or a
// loop runs (the heartbeat must not overtake), and a refusal (a full
// socket) leaves the heartbeat to the queue: the writer is idle, not
// claimed.
func TestWriter_TryBeatFallsBack(t *testing.T) {
	tries := 0
	refuse := true
	r := newTryRig(t, func([]byte) (bool, error) {
		tries++
		return !refuse, nil
	})
	var buf []byte
	if sent, done := r.w.tryBeat(beatOf(1), &buf); sent || done {
		t.Fatalf("refused write: tryBeat = %v, %v; want false, false", sent, done)
	}
	if !r.isIdle() || tries != 1 {
		t.Fatalf("after a refused write: idle %v, tries %d", r.isIdle(), tries)
	}

	refuse = false
	r.w.mu.Lock()
	r.w.idle = false // a loop runs
	r.w.mu.Unlock()
	if sent, done := r.w.tryBeat(beatOf(2), &buf); sent || done || tries != 1 {
		t.Fatalf("loop running: tryBeat = %v, %v after %d tries; want not tried", sent, done, tries)
	}
	r.w.mu.Lock()
	r.w.idle = true
	r.w.ctl = append(r.w.ctl, outItem{env: wire.Envelope{Kind: wire.KindReply, Corr: 1}})
	r.w.mu.Unlock()
	if sent, done := r.w.tryBeat(beatOf(3), &buf); sent || done || tries != 1 {
		t.Fatalf("reply queued: tryBeat = %v, %v after %d tries; want not tried", sent, done, tries)
	}
	r.w.mu.Lock()
	r.w.ctl = r.w.ctl[:0]
	r.w.mu.Unlock()

	var none *[]byte
	if sent, done := r.w.tryBeat(beatOf(4), none); sent || done || tries != 1 {
		t.Fatal("tried without an encoding buffer (a beat from outside the loop)")
	}
}

// What callers queue while a heartbeat is being written waits for it, then
// a loop is started that sends it; a stop meanwhile ends the writer through
// a loop too.
func TestWriter_TryBeatQueuedMeanwhile(t *testing.T) {
	var r *tryRig
	r = newTryRig(t, func([]byte) (bool, error) {
		if err := r.w.submit(wire.Envelope{Kind: wire.KindRequest, Corr: 9}); err != nil {
			t.Error(err)
		}
		return true, nil
	})
	var buf []byte
	if sent, _ := r.w.tryBeat(beatOf(1), &buf); !sent {
		t.Fatal("not sent")
	}
	select {
	case k := <-r.sent:
		if k != wire.KindRequest {
			t.Fatalf("sent %v, want the request queued during the write", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request queued during the heartbeat's write was never sent")
	}
	if r.spawns.Load() != 1 {
		t.Fatalf("%d loops started, want 1", r.spawns.Load())
	}

	s := newTryRig(t, nil)
	s.w.try = func([]byte) (bool, error) {
		s.w.stop()
		return true, nil
	}
	if sent, _ := s.w.tryBeat(beatOf(1), &buf); !sent {
		t.Fatal("not sent")
	}
	select {
	case <-s.w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a writer stopped during a heartbeat's write never finished")
	}
}

// A failed write is the pipe's failure: onError is told, the heartbeat is
// dealt with (not queued again), and the writer is left idle so that the
// stop that follows finishes it.
func TestWriter_TryBeatFails(t *testing.T) {
	broken := errors.New("connection reset")
	r := newTryRig(t, func([]byte) (bool, error) { return false, broken })
	var buf []byte
	if sent, done := r.w.tryBeat(beatOf(1), &buf); sent || !done {
		t.Fatalf("failed write: tryBeat = %v, %v; want false, true", sent, done)
	}
	select {
	case err := <-r.errs:
		if !errors.Is(err, broken) {
			t.Fatalf("onError(%v), want the write's error", err)
		}
	default:
		t.Fatal("onError was not told of the failed write")
	}
	if !r.isIdle() {
		t.Fatal("the writer is not idle after a failed write")
	}
	r.w.stop()
	select {
	case <-r.w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stop after a failed write never finished the writer")
	}
}
