package zguard

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

func TestMaxPendingHandshakes(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = 10 * time.Second
	cfg.FirstByteTimeout = 10 * time.Second // the pending conns stay silent
	cfg.MaxPendingHandshakes = 2
	router, addr := newRouter(t, cfg)
	defer router.Close()

	s1, s2, s3 := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	ev := rec.waitRejected(t, ErrTooManyPending)
	if ev.Remote != s3.LocalAddr().String() {
		t.Fatalf("rejected %v, want the third conn %s", ev, s3.LocalAddr())
	}
	s3.waitClosed(t)
	if !s1.stillOpen() || !s2.stillOpen() {
		t.Fatal("a pending conn within the limit was closed")
	}

	// A peer hanging up frees its slot.
	s1.Close()
	rec.waitFor(t, "s1 closed", func(closed, _ []ConnEvent) bool {
		for _, ev := range closed {
			if ev.Remote == s1.LocalAddr().String() {
				return true
			}
		}
		return false
	})
	d := newDealer(t, cfg, "d", addr)
	defer d.Close()
	exchange(t, router, d, "d")
}

func TestListenerClosesPendingConns(t *testing.T) {
	for _, viaCtx := range []bool{false, true} {
		name := "Close"
		if viaCtx {
			name = "context"
		}
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			cfg := rec.install(DefaultConfig())
			cfg.HandshakeTimeout = 10 * time.Second
			cfg.FirstByteTimeout = 10 * time.Second // the silent conn waits for Close
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l, err := listen(ctx, "127.0.0.1:0", cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()

			silent := dialRaw(t, l.Addr().String())
			greeter := dialRaw(t, l.Addr().String())
			greeter.write(t, greetingBytes())
			greeter.write(t, frameBytes(flagCommand, readyBody(prop("Socket-Type", "DEALER"), prop("Identity", "g"))))
			var handed net.Conn
			within(t, "accept the greeter", func() error {
				handed, err = l.Accept()
				return err
			})
			if handed.RemoteAddr().String() != greeter.LocalAddr().String() {
				t.Fatalf("accepted %v, want %v", handed.RemoteAddr(), greeter.LocalAddr())
			}

			if viaCtx {
				cancel()
			} else if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			silent.waitClosed(t)
			greeter.waitClosed(t)
			rec.waitFor(t, "both closed locally", func(closed, _ []ConnEvent) bool {
				n := 0
				for _, ev := range closed {
					if errors.Is(ev.Reason, ErrClosedLocally) {
						n++
					}
				}
				return n == 2
			})
			if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after close: %v", err)
			}
			_ = l.Close() // idempotent
		})
	}
}

// Every close path of one conn reports it once.
func TestConnClosedOnce(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	a, b := net.Pipe()
	defer b.Close()
	c := newConn(a, nil, false, cfg, nil, time.Now())
	c.reject(ErrFrameTooLarge)
	_ = c.Close()
	_ = c.Close()
	c.closeWith(errors.New("late"), true)
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("write on closed conn succeeded")
	}
	closed, rejected := rec.snapshot()
	if len(closed) != 1 || len(rejected) != 1 || !errors.Is(closed[0].Reason, ErrFrameTooLarge) {
		t.Fatalf("closed=%v rejected=%v", closed, rejected)
	}
}

// Both ends of a real pipe report their close exactly once.
func TestConnClosedOnceEndToEnd(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	router, addr := newRouter(t, cfg)
	dealer := newDealer(t, cfg, "d", addr)
	exchange(t, router, dealer, "d")

	dealer.Close()
	rec.waitFor(t, "both ends closed", func(closed, _ []ConnEvent) bool { return len(closed) >= 2 })
	router.Close()
	closed, rejected := rec.snapshot()
	if len(rejected) != 0 {
		t.Fatalf("rejected %v", rejected)
	}
	var dialSide, acceptSide int
	for _, ev := range closed {
		switch {
		case ev.Remote == addr && ev.Identity == "router":
			dialSide++
		case ev.Remote != addr && ev.Identity == "d":
			acceptSide++
		default:
			t.Errorf("unexpected event %v", ev)
		}
	}
	if dialSide != 1 || acceptSide != 1 {
		t.Fatalf("dial side closed %d times, accept side %d times: %v", dialSide, acceptSide, closed)
	}
}

// zmq4 neither adds nor closes a conn whose READY names an incompatible
// socket type; the guard closes it when zmq4 never reads it again.
func TestOrphanedAfterHandshake(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = 200 * time.Millisecond
	router, addr := newRouter(t, cfg)
	defer router.Close()

	p := dialRaw(t, addr)
	p.write(t, greetingBytes())
	p.write(t, frameBytes(flagCommand, readyBody(prop("Socket-Type", "PUB"), prop("Identity", "pub"))))
	ev := rec.waitRejected(t, ErrHandshakeTimeout)
	if ev.Identity != "pub" {
		t.Fatalf("rejected %v", ev)
	}
	p.waitClosed(t)

	d := newDealer(t, cfg, "pub", addr) // the identity was released
	defer d.Close()
	exchange(t, router, d, "pub")
}
