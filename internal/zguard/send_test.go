package zguard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Direct sends reach the peer as ordinary ZMTP messages in both
// directions, short and long frames alike, and a send with no connection
// says so.
func TestDirectSendBothDirections(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	router, addr := newRouter(t, cfg)
	defer router.Close()

	out := &Outbound{}
	if err := out.Send([]byte("early")); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("send before the dial = %v, want ErrNotConnected", err)
	}
	dcfg := DefaultConfig()
	dcfg.Outbound = out
	d := newDealer(t, dcfg, "D", addr)
	defer d.Close()

	long := make([]byte, 70<<10)
	for i := range long {
		long[i] = byte(i)
	}
	for _, body := range [][]byte{[]byte("hi"), {}, long} {
		within(t, fmt.Sprintf("dealer → router, %d bytes", len(body)), func() error {
			if err := out.Send(body); err != nil {
				return err
			}
			msg, err := router.Recv()
			if err != nil {
				return err
			}
			if len(msg.Frames) != 2 || string(msg.Frames[0]) != "D" || string(msg.Frames[1]) != string(body) {
				return fmt.Errorf("router got %d frames, identity %q, %d bytes", len(msg.Frames), msg.Frames[0], len(msg.Frames[len(msg.Frames)-1]))
			}
			return nil
		})
		within(t, fmt.Sprintf("router → dealer, %d bytes", len(body)), func() error {
			if err := cfg.Inbound.Send([]byte("D"), body); err != nil {
				return err
			}
			msg, err := d.Recv()
			if err != nil {
				return err
			}
			if len(msg.Frames) != 1 || string(msg.Frames[0]) != string(body) {
				return fmt.Errorf("dealer got %d frames, %d bytes", len(msg.Frames), len(msg.Frames[0]))
			}
			return nil
		})
	}
	// zmq4's own sends still work beside direct ones.
	exchange(t, router, d, "D")
	if err := cfg.Inbound.Send([]byte("nobody"), []byte("x")); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("send to an unknown identity = %v, want ErrNotConnected", err)
	}
}

// With direct sends a peer that stops reading holds up only the goroutine
// writing to it: another peer of the same listener is served while that
// write is still blocked (the write timeout is far longer than the test),
// unlike zmq4's ROUTER, whose socket-wide lock is held for the whole write.
func TestDirectSendStuckPeerHoldsUpOnlyItself(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	cfg.WriteTimeout = time.Minute
	router, addr := newRouter(t, cfg)
	defer router.Close()

	stuck := dialRaw(t, addr)
	stuck.handshake(t, "A")
	stuck.write(t, frameBytes(0, []byte("hi")))
	within(t, "router recv A's hello", func() error {
		_, err := router.Recv()
		return err
	})
	b := newDealer(t, DefaultConfig(), "B", addr)
	defer b.Close()
	exchange(t, router, b, "B")

	// Fill A's socket buffers until a write blocks.
	blocked := make(chan error, 1)
	sent := make(chan struct{}, 1)
	go func() {
		big := make([]byte, 256<<10)
		for {
			if err := cfg.Inbound.Send([]byte("A"), big); err != nil {
				blocked <- err
				return
			}
			select {
			case sent <- struct{}{}:
			default:
			}
		}
	}()
	// A write is blocked once no send to A has completed for a while; that
	// is only a guess, so the check below is what counts: B is served and A's
	// writer has still not returned.
	for quiet := 0; quiet < 3; {
		select {
		case <-sent:
			quiet = 0
		case err := <-blocked:
			t.Fatalf("send to A ended before B was tried: %v", err)
		case <-time.After(100 * time.Millisecond):
			quiet++
		}
	}
	within(t, "B served while A's write is blocked", func() error {
		for i := range 50 {
			if err := cfg.Inbound.Send([]byte("B"), fmt.Appendf(nil, "%d", i)); err != nil {
				return err
			}
			msg, err := b.Recv()
			if err != nil {
				return err
			}
			if got := string(msg.Frames[0]); got != fmt.Sprint(i) {
				return fmt.Errorf("B got %q, want %d", got, i)
			}
		}
		return nil
	})
	select {
	case err := <-blocked:
		t.Fatalf("A's write ended (%v): the test did not hold it up", err)
	default:
	}
	_ = stuck.Close()
	within(t, "A's blocked write ends once A is gone", func() error {
		select {
		case <-blocked:
			return nil
		case <-time.After(waitDeadline):
			return errors.New("still blocked")
		}
	})
}

// A direct send never starts inside a message another writer (zmq4) has
// begun: it fails the connection instead of interleaving.
func TestDirectSendRefusesMidMessage(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	r := newRecorder()
	cfg = r.install(cfg)
	router := zmq4.NewRouter(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity("router")), zmq4.WithLogger(discardLogger()))
	defer router.Close()
	Register()
	if err := router.Listen(Scheme + "://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	d := newDealer(t, DefaultConfig(), "D", router.Addr().String())
	defer d.Close()
	exchange(t, router, d, "D")

	c := liveConn(t, cfg.Inbound, "D")
	// Another writer's header of a two-frame message: the stream is now
	// inside a message.
	if _, err := c.Write(frameBytes(flagMore, []byte("part"))); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Inbound.Send([]byte("D"), []byte("x")); !errors.Is(err, ErrMidMessage) {
		t.Fatalf("direct send inside a message = %v, want ErrMidMessage", err)
	}
	r.waitFor(t, "D closed", func(closed, _ []ConnEvent) bool {
		for _, ev := range closed {
			if ev.Identity == "D" && errors.Is(ev.Reason, ErrMidMessage) {
				return true
			}
		}
		return false
	})
}

// liveConn returns the live inbound conn of identity.
func liveConn(t *testing.T, in *Inbound, identity string) *conn {
	t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, l := range in.ls {
		l.mu.Lock()
		c := l.live[identity]
		l.mu.Unlock()
		if c != nil {
			return c
		}
	}
	t.Fatalf("no live conn for %q", identity)
	return nil
}
