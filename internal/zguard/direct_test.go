package zguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Direct sends and reads carry ordinary ZMTP messages in both directions,
// short and long frames alike, and a send with no connection says so.
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
			if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, "D")), body); err != nil {
				return err
			}
			got, err := out.Recv()
			if err != nil {
				return err
			}
			if string(got) != string(body) {
				return fmt.Errorf("dealer got %d bytes", len(got))
			}
			return nil
		})
	}
	// zmq4's own sends still work beside direct ones.
	within(t, "zmq4 router → direct read", func() error {
		if err := router.Send(zmq4.NewMsgFrom([]byte("D"), []byte("from zmq4"))); err != nil {
			return err
		}
		got, err := out.Recv()
		if err == nil && string(got) != "from zmq4" {
			err = fmt.Errorf("got %q", got)
		}
		return err
	})
	if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, "nobody")), []byte("x")); !errors.Is(err, ErrNotConnected) {
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

	stuck := speakingPeer(t, router, addr, "A")
	b := newDealer(t, DefaultConfig(), "B", addr)
	defer b.Close()
	exchange(t, router, b, "B")

	// Fill A's socket buffers until a write blocks.
	blocked := make(chan error, 1)
	sent := make(chan struct{}, 1)
	go func() {
		big := make([]byte, 256<<10)
		for {
			if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, "A")), big); err != nil {
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
			if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, "B")), fmt.Appendf(nil, "%d", i)); err != nil {
				return err
			}
			if err := recvCounting(b, i); err != nil {
				return err
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
	if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, "D")), []byte("x")); !errors.Is(err, ErrMidMessage) {
		t.Fatalf("direct send inside a message = %v, want ErrMidMessage", err)
	}
	r.waitClosed(t, "D", ErrMidMessage)
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

// A direct read skips ZMTP commands, reports a multipart message as
// ErrMultipart and goes on with the next one, refuses a frame over the
// limit before allocating it, and reports the peer's close as io.EOF.
func TestDirectReadEdges(t *testing.T) {
	addr, accepted := plainListener(t)
	out := &Outbound{}
	cfg := DefaultConfig()
	cfg.Outbound = out
	cfg.MaxFrame = 1 << 10
	d := zmq4.NewDealer(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity("D")),
		zmq4.WithDialerMaxRetries(0), zmq4.WithLogger(discardLogger()))
	defer d.Close()
	dialed := make(chan error, 1)
	Register()
	go func() { dialed <- d.Dial(Scheme + "://" + addr) }()
	var srv net.Conn
	select {
	case srv = <-accepted:
	case <-time.After(waitDeadline):
	}
	if srv == nil {
		t.Fatal("no connection")
	}
	defer srv.Close()
	peer := &rawPeer{srv}
	// The server side of the handshake, by hand.
	_ = srv.SetDeadline(time.Now().Add(waitDeadline))
	peer.write(t, greetingBytes())
	peer.write(t, frameBytes(flagCommand, readyBody(prop("Socket-Type", "ROUTER"))))
	g := make([]byte, greetingLen)
	if _, err := io.ReadFull(srv, g); err != nil {
		t.Fatal(err)
	}
	peer.readFrame(t) // the dealer's READY
	if err := <-dialed; err != nil {
		t.Fatal(err)
	}
	var stream []byte
	stream = append(stream, frameBytes(flagCommand, []byte("\x04PING"))...)
	stream = append(stream, frameBytes(0, []byte("one"))...)
	stream = append(stream, frameBytes(flagMore, []byte("a"))...)
	stream = append(stream, frameBytes(0, []byte("b"))...)
	stream = append(stream, frameBytes(0, []byte("two"))...)
	peer.write(t, stream)
	for _, want := range []string{"one", "", "two"} {
		got, err := out.Recv()
		switch {
		case want == "" && !errors.Is(err, ErrMultipart):
			t.Fatalf("multipart message: %q, %v; want ErrMultipart", got, err)
		case want != "" && (err != nil || string(got) != want):
			t.Fatalf("Recv = %q, %v; want %q", got, err, want)
		}
	}
	peer.write(t, frameBytes(0, make([]byte, 2<<10)))
	if _, err := out.Recv(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("an oversized frame: %v, want ErrFrameTooLarge", err)
	}
	peer.waitClosed(t)
}

// The peer closing the connection ends a direct read with io.EOF.
func TestDirectReadPeerClosed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	router, addr := newRouter(t, cfg)
	out := &Outbound{}
	dcfg := DefaultConfig()
	dcfg.Outbound = out
	d := newDealer(t, dcfg, "D", addr)
	defer d.Close()
	within(t, "hello", func() error {
		if err := out.Send([]byte("hi")); err != nil {
			return err
		}
		_, err := router.Recv()
		return err
	})
	_ = router.Close()
	within(t, "Recv after the peer closed", func() error {
		if _, err := out.Recv(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("Recv = %v, want io.EOF", err)
		}
		return nil
	})
}

// With ReadDirect the listener's connections are read directly: messages
// arrive on Messages with their identity, in order, a multipart one as
// ErrMultipart; a peer that spoke is not refused as silent; a silent one
// still is.
func TestDirectReadInbound(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.Inbound = &Inbound{}
	cfg.Inbound.ReadDirect(4)
	cfg.SpeakFirst = true
	cfg.HandshakeTimeout = 300 * time.Millisecond
	router, addr := newRouter(t, cfg)
	defer router.Close()

	p := dialRaw(t, addr)
	p.handshake(t, "P")
	p.write(t, cat(frameBytes(0, []byte("one")), frameBytes(flagMore, []byte("a")), frameBytes(0, []byte("b")),
		frameBytes(flagCommand, []byte("\x04PING")), frameBytes(0, make([]byte, 300))))
	for i, want := range []string{"one", "", "long"} {
		var m Received
		select {
		case m = <-cfg.Inbound.Messages():
		case <-time.After(waitDeadline):
			t.Fatalf("message %d: none", i)
		}
		switch {
		case m.Identity != "P":
			t.Fatalf("message %d from %q, want P", i, m.Identity)
		case want == "" && !errors.Is(m.Err, ErrMultipart):
			t.Fatalf("multipart message: %+v, want ErrMultipart", m)
		case want == "one" && (m.Err != nil || string(m.Frame) != "one"):
			t.Fatalf("message %d: %+v", i, m)
		case want == "long" && (m.Err != nil || len(m.Frame) != 300):
			t.Fatalf("message %d: %d bytes, %v", i, len(m.Frame), m.Err)
		}
	}
	silent := dialRaw(t, addr)
	silent.handshake(t, "S")
	rec.waitRejected(t, ErrSilent)
	silent.waitClosed(t)
	if !p.stillOpen() {
		t.Fatal("the peer that spoke was closed")
	}
	within(t, "a direct send back", func() error {
		if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, "P")), []byte("back")); err != nil {
			return err
		}
		_ = p.SetReadDeadline(time.Now().Add(waitDeadline))
		if got := p.readFrame(t); string(got) != "back" {
			return fmt.Errorf("got %q", got)
		}
		return nil
	})
}
