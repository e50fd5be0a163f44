package zguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

func TestEndpoint(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"tcp://127.0.0.1:5555", "zgtcp://127.0.0.1:5555"},
		{"tcp://*:0", "zgtcp://*:0"},
		{"zgtcp://h:1", "zgtcp://h:1"},
	} {
		got, err := Endpoint(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if back := TCPEndpoint(got); back != "tcp://"+got[len("zgtcp://"):] {
			t.Errorf("TCPEndpoint(%q) = %q", got, back)
		}
	}
	for _, bad := range []string{"ipc:///tmp/x", "inproc://x", "tcp://", "127.0.0.1:5555", ""} {
		if _, err := Endpoint(bad); !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("Endpoint(%q) err = %v", bad, err)
		}
	}
	if got := TCPEndpoint("ipc:///x"); got != "ipc:///x" {
		t.Errorf("TCPEndpoint(ipc) = %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := Config{}.withDefaults()
	if fmt.Sprint(cfg) != fmt.Sprint(DefaultConfig().withDefaults()) {
		t.Fatalf("zero config with defaults = %+v", cfg)
	}
	// The derived fields follow what they derive from.
	if cfg.ReservedForKnown != 16 || cfg.AuthTimeout != 6*time.Second {
		t.Fatalf("derived defaults: ReservedForKnown %d AuthTimeout %v", cfg.ReservedForKnown, cfg.AuthTimeout)
	}
	small := Config{HandshakeTimeout: 300 * time.Millisecond, MaxPendingHandshakes: 2}.withDefaults()
	if small.FirstByteTimeout != 300*time.Millisecond || small.MaxPendingPerSource != 2 || small.ReservedForKnown != 0 ||
		small.AuthTimeout != 900*time.Millisecond {
		t.Fatalf("defaults under a short handshake and 2 pending: %+v", small)
	}
	for name, mut := range map[string]func(*Config){
		"ReadBufferSize":      func(c *Config) { c.ReadBufferSize = 16 },
		"MaxPendingPerSource": func(c *Config) { c.MaxPendingPerSource = -1 },
		"ReservedForKnown":    func(c *Config) { c.ReservedForKnown = 64 },
		"FirstByteTimeout":    func(c *Config) { c.FirstByteTimeout = -1 },
		"AuthTimeout":         func(c *Config) { c.AuthTimeout = -1 },
		"AwaitAuth":           func(c *Config) { c.AwaitAuth = true },
	} {
		bad := DefaultConfig()
		mut(&bad)
		if _, err := configFrom(WithConfig(context.Background(), bad)); !errors.Is(err, ErrInvalidConfig) ||
			!strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	bad := DefaultConfig()
	bad.ReadBufferSize = 16
	Register()
	r := zmq4.NewRouter(WithConfig(context.Background(), bad), zmq4.WithLogger(discardLogger()))
	defer r.Close()
	if err := r.Listen(Scheme + "://127.0.0.1:0"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("listen with bad config: %v", err)
	}
}

// Guard 1: a silent TCP conn stalls no accept.
func TestSilentConnStallsNoAccept(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = 10 * time.Second
	cfg.FirstByteTimeout = 10 * time.Second // silent for the whole test
	router, addr := newRouter(t, cfg)
	defer router.Close()

	silent := dialRaw(t, addr)
	dealer := newDealer(t, cfg, "d1", addr)
	defer dealer.Close()
	exchange(t, router, dealer, "d1")

	if !silent.stillOpen() {
		t.Fatal("silent conn was closed before its handshake deadline")
	}
	if _, rejected := rec.snapshot(); len(rejected) != 0 {
		t.Fatalf("rejected %v", rejected)
	}
}

// Guard 1, deadline side: a silent conn, and one that sends only its
// greeting (so zmq4's inline handshake waits on it), are closed at the
// handshake deadline and the router serves peers afterwards.
func TestHandshakeTimeout(t *testing.T) {
	for _, tt := range []struct {
		name     string
		greeting bool
	}{{"silent", false}, {"greeting only", true}} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder()
			cfg := rec.install(DefaultConfig())
			cfg.HandshakeTimeout = 200 * time.Millisecond
			router, addr := newRouter(t, cfg)
			defer router.Close()

			stuck := dialRaw(t, addr)
			if tt.greeting {
				stuck.write(t, greetingBytes())
			}
			ev := rec.waitRejected(t, ErrHandshakeTimeout)
			if ev.Remote != stuck.LocalAddr().String() {
				t.Fatalf("rejected %v, want remote %s", ev, stuck.LocalAddr())
			}
			stuck.waitClosed(t)

			dealer := newDealer(t, cfg, "after", addr)
			defer dealer.Close()
			exchange(t, router, dealer, "after")
		})
	}
}

// A dial to a listener that never greets fails at the handshake deadline.
func TestDialHandshakeTimeout(t *testing.T) {
	addr, accepted := plainListener(t)
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = 200 * time.Millisecond
	Register()
	d := zmq4.NewDealer(WithConfig(context.Background(), cfg), zmq4.WithDialerMaxRetries(0), zmq4.WithLogger(discardLogger()))
	defer d.Close()
	within(t, "dial to mute listener", func() error {
		if err := d.Dial(Scheme + "://" + addr); err == nil {
			return errors.New("dial succeeded")
		}
		return nil
	})
	rec.waitRejected(t, ErrHandshakeTimeout)
	if c := <-accepted; c != nil {
		c.Close()
	}
}

// Guard 2: a peer that never reads blocks no other peer.
func TestStuckReaderBlocksNoOtherPeer(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.WriteTimeout = 300 * time.Millisecond
	router, addr := newRouter(t, cfg)
	defer router.Close()

	// Peer A completes the handshake by hand, says hello, then never reads.
	speakingPeer(t, router, addr, "A") // closed by the cleanup

	b := newDealer(t, cfg, "B", addr)
	defer b.Close()
	exchange(t, router, b, "B")

	big := make([]byte, 256<<10)
	sentB := 0
	var sendErr error
	within(t, "sends until A fails", func() error {
		for i := 0; i < 2000 && sendErr == nil; i++ {
			sendErr = router.Send(zmq4.NewMsgFrom([]byte("A"), big))
			if err := router.Send(zmq4.NewMsgFrom([]byte("B"), fmt.Appendf(nil, "%d", sentB))); err != nil {
				return fmt.Errorf("send to B: %w", err)
			}
			sentB++
		}
		// B keeps being served after A is gone.
		for range 10 {
			if err := router.Send(zmq4.NewMsgFrom([]byte("B"), fmt.Appendf(nil, "%d", sentB))); err != nil {
				return fmt.Errorf("send to B after A: %w", err)
			}
			sentB++
		}
		return nil
	})
	if !errors.Is(sendErr, ErrWriteTimeout) {
		t.Fatalf("send to stuck A: err = %v, want ErrWriteTimeout", sendErr)
	}
	rec.waitClosed(t, "A", ErrWriteTimeout)
	within(t, "B receives every message in order", func() error {
		for i := range sentB {
			if err := recvCounting(b, i); err != nil {
				return err
			}
		}
		return nil
	})
}

// Guard 3: a forged frame header kills nothing.
func TestForgedFrameHeader(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	router, addr := newRouter(t, cfg)
	defer router.Close()

	good := newDealer(t, cfg, "good", addr)
	defer good.Close()
	exchange(t, router, good, "good")

	evil := dialRaw(t, addr)
	evil.handshake(t, "evil")
	evil.write(t, longHeader(0, 1<<40))

	ev := rec.waitRejected(t, ErrFrameTooLarge)
	var fe *FrameTooLargeError
	if !errors.As(ev.Reason, &fe) || fe.Size != 1<<40 || fe.Limit != cfg.MaxFrame || ev.Identity != "evil" {
		t.Fatalf("rejection = %+v", ev)
	}
	evil.waitClosed(t)
	exchange(t, router, good, "good")
}

// A frame just over a small limit is refused; one at the limit passes.
func TestMaxFrameLimit(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.MaxFrame = 1000
	router, addr := newRouter(t, cfg)
	defer router.Close()

	p := dialRaw(t, addr)
	p.handshake(t, "p")
	p.write(t, frameBytes(0, make([]byte, 1000)))
	within(t, "recv frame at limit", func() error {
		msg, err := router.Recv()
		if err == nil && len(msg.Frames[1]) != 1000 {
			err = fmt.Errorf("got %d bytes", len(msg.Frames[1]))
		}
		return err
	})
	p.write(t, frameBytes(0, make([]byte, 1001)))
	rec.waitRejected(t, ErrFrameTooLarge)
	p.waitClosed(t)
}

// A READY whose properties are truncated would panic zmq4's decoder.
func TestMalformedReady(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	router, addr := newRouter(t, cfg)
	defer router.Close()

	p := dialRaw(t, addr)
	p.write(t, greetingBytes())
	p.write(t, frameBytes(flagCommand, append(readyBody(), 200, 'I')))
	rec.waitRejected(t, ErrMalformedCommand)
	p.waitClosed(t)

	d := newDealer(t, cfg, "d", addr)
	defer d.Close()
	exchange(t, router, d, "d")
}

// Guard 4: two pipes with one identity deliver nothing twice. The second
// is refused before zmq4 sees it, with a ZMTP ERROR command: a zmq4 dial
// fails (zmq4 knows no ERROR command).
func TestDuplicateIdentity(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	router, addr := newRouter(t, cfg)
	defer router.Close()

	first := newDealer(t, cfg, "twin", addr)
	defer first.Close()
	exchange(t, router, first, "twin")

	second := zmq4.NewDealer(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity("twin")),
		zmq4.WithDialerMaxRetries(0), zmq4.WithLogger(discardLogger()))
	if err := second.Dial(Scheme + "://" + addr); err == nil {
		t.Fatal("a second dial with a live identity succeeded")
	}
	rec.waitRejected(t, ErrDuplicateIdentity)

	secondGot := make(chan int, 1)
	go func() {
		n := 0
		for {
			_, err := second.Recv()
			if errors.Is(err, context.Canceled) {
				break
			}
			if err == nil {
				n++
			}
		}
		secondGot <- n
	}()

	const n = 50
	within(t, "N messages reach the first twin", func() error {
		for i := range n {
			if err := router.Send(zmq4.NewMsgFrom([]byte("twin"), fmt.Appendf(nil, "%d", i))); err != nil {
				return err
			}
		}
		for i := range n {
			msg, err := first.Recv()
			if err != nil {
				return err
			}
			if got := string(msg.Frames[0]); got != fmt.Sprint(i) {
				return fmt.Errorf("got %q, want %d", got, i)
			}
		}
		return nil
	})
	second.Close()
	if got := <-secondGot; got != 0 {
		t.Fatalf("second twin received %d messages; total %d for %d sent", got, n+got, n)
	}

	// Once the first twin has gone, the identity is free again.
	first.Close()
	rec.waitFor(t, "first twin closed", func(closed, _ []ConnEvent) bool {
		for _, ev := range closed {
			if ev.Identity == "twin" && !errors.Is(ev.Reason, ErrDuplicateIdentity) && ev.Remote != addr {
				return true
			}
		}
		return false
	})
	third := newDealer(t, cfg, "twin", addr)
	defer third.Close()
	within(t, "third twin exchange", func() error {
		if err := third.Send(zmq4.NewMsgString("hello")); err != nil {
			return err
		}
		if _, err := router.Recv(); err != nil {
			return err
		}
		// zmq4 removes a dead conn asynchronously (its reaper); until then a
		// send to the identity also tries the dead conn and reports its
		// error, while the live conn still gets the message.
		if err := router.Send(zmq4.NewMsgFrom([]byte("twin"), []byte("welcome"))); err != nil {
			t.Logf("send while zmq4 still holds the dead twin: %v", err)
		}
		msg, err := third.Recv()
		if err == nil && string(msg.Frames[0]) != "welcome" {
			err = fmt.Errorf("third got %q", msg.Frames)
		}
		return err
	})
}
