package zguard

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// Pre-authentication limits: what a stranger can hold on a listener before
// its handshake has authenticated, and for how long. Linux routes all of
// 127.0.0.0/8 to loopback, so strangers dial from 127.0.0.2 and up.

// dialFrom opens a raw TCP conn to addr from the local address src.
func dialFrom(t *testing.T, src, addr string) *rawPeer {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: waitDeadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("raw dial from %s: %v", src, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawPeer{c}
}

// readyFrame is a DEALER's READY announcing identity.
func readyFrame(identity string) []byte {
	return frameBytes(flagCommand, readyBody(prop("Socket-Type", "DEALER"), prop("Identity", identity)))
}

// A connection that sends nothing at all is closed at FirstByteTimeout,
// long before the handshake deadline, with and without TLS.
func TestPreAuth_SilentBeforeFirstByteIsClosedEarly(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	for _, tlsOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tlsOn), func(t *testing.T) {
			rec := newRecorder()
			cfg := rec.install(DefaultConfig())
			if tlsOn {
				cfg, rec = tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
			}
			cfg.HandshakeTimeout = time.Hour // only the first-byte wait can end it
			cfg.FirstByteTimeout = 100 * time.Millisecond
			router, addr := newRouter(t, cfg)
			defer router.Close()
			p := dialRaw(t, addr)
			ev := rec.waitRejected(t, ErrNoGreeting)
			if ev.Remote != p.LocalAddr().String() || !errors.Is(ev.Reason, ErrHandshakeTimeout) {
				t.Fatalf("rejected %v", ev)
			}
			p.waitClosed(t)
		})
	}
}

// One byte starts the handshake deadline: a connection that sent part of
// its greeting is not refused for silence.
func TestPreAuth_FirstByteStartsTheHandshake(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	// The byte is written at once; the first-byte wait is long enough for
	// a loaded machine to get it there.
	cfg.HandshakeTimeout = 1500 * time.Millisecond
	cfg.FirstByteTimeout = time.Second
	router, addr := newRouter(t, cfg)
	defer router.Close()
	p := dialRaw(t, addr)
	p.write(t, greetingBytes()[:1])
	ev := rec.waitRejected(t, ErrHandshakeTimeout)
	if errors.Is(ev.Reason, ErrNoGreeting) {
		t.Fatalf("a conn that sent a byte was refused as silent: %v", ev)
	}
}

// A stranger that sends its greeting and then stalls, however many times,
// does not hold up zmq4's accept loop (which runs the ZMTP handshake
// inline): the listener reads each peer's READY before zmq4 sees it.
func TestPreAuth_StalledGreetingsHoldUpNoPeer(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = time.Hour
	router, addr := newRouter(t, cfg)
	defer router.Close()
	for range 4 {
		p := dialFrom(t, "127.0.0.2", addr)
		p.write(t, greetingBytes())
	}
	dcfg := DefaultConfig()
	dcfg.HandshakeTimeout = 5 * time.Second // the dial fails if the listener stalls
	d := newDealer(t, dcfg, "d", addr)
	defer d.Close()
	exchange(t, router, d, "d")
}

// One source takes at most MaxPendingPerSource slots; the rest serve
// others.
func TestPreAuth_PerSourceCap(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = time.Hour
	cfg.FirstByteTimeout = time.Hour
	cfg.MaxPendingHandshakes = 8
	cfg.MaxPendingPerSource = 3
	router, addr := newRouter(t, cfg)
	defer router.Close()
	held := make([]*rawPeer, 3)
	for i := range held {
		held[i] = dialFrom(t, "127.0.0.2", addr)
	}
	over := dialFrom(t, "127.0.0.2", addr)
	ev := rec.waitRejected(t, ErrTooManyFromSource)
	var pe *PendingLimitError
	if ev.Remote != over.LocalAddr().String() || !errors.As(ev.Reason, &pe) || pe.Source.String() != "127.0.0.2" || pe.Limit != 3 {
		t.Fatalf("rejected %v", ev)
	}
	over.waitClosed(t)
	for _, p := range held {
		if !p.stillOpen() {
			t.Fatal("a pending conn within its source's cap was closed")
		}
	}
	d := newDealer(t, cfg, "d", addr)
	defer d.Close()
	exchange(t, router, d, "d")
}

// Strangers from many sources fill only their share; a source that
// completed a handshake before gets in through the reserve.
func TestPreAuth_ReserveKeepsKnownSourcesIn(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = time.Hour
	cfg.FirstByteTimeout = time.Hour
	cfg.MaxPendingHandshakes = 6
	cfg.MaxPendingPerSource = 1
	cfg.ReservedForKnown = 2
	router, addr := newRouter(t, cfg)
	defer router.Close()

	first := newDealer(t, cfg, "first", addr) // 127.0.0.1 becomes known
	exchange(t, router, first, "first")
	first.Close()

	for i := range 4 { // the strangers' share: 6 - 2
		dialFrom(t, fmt.Sprintf("127.0.0.%d", 2+i), addr)
	}
	late := dialFrom(t, "127.0.0.6", addr)
	ev := rec.waitRejected(t, ErrTooManyPending)
	var pe *PendingLimitError
	if ev.Remote != late.LocalAddr().String() || !errors.As(ev.Reason, &pe) || !pe.Strangers {
		t.Fatalf("rejected %v", ev)
	}
	again := newDealer(t, cfg, "again", addr)
	defer again.Close()
	exchange(t, router, again, "again")
}

// With AwaitAuth a conn stays pending after its READY and its first
// messages, until its owner reports it authenticated; one never reported
// is closed at AuthTimeout.
func TestPreAuth_AwaitAuth(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = time.Hour
	cfg.MaxPendingHandshakes = 1
	cfg.AwaitAuth, cfg.Inbound = true, &Inbound{}
	router, addr := newRouter(t, cfg)
	defer router.Close()

	a := newDealer(t, cfg, "a", addr)
	defer a.Close()
	exchange(t, router, a, "a") // past READY, messages flow: still pending
	b := dialRaw(t, addr)
	ev := rec.waitRejected(t, ErrTooManyPending)
	if ev.Remote != b.LocalAddr().String() {
		t.Fatalf("rejected %v", ev)
	}
	if !cfg.Inbound.Authenticated(keyOf(cfg.Inbound, "a")) {
		t.Fatal("Authenticated found no conn a")
	}
	if cfg.Inbound.Authenticated(keyOf(cfg.Inbound, "nobody")) {
		t.Fatal("Authenticated found a conn nobody announced")
	}
	c := newDealer(t, cfg, "c", addr) // a's slot is free
	defer c.Close()
	exchange(t, router, c, "c")
	exchange(t, router, a, "a") // an authenticated conn stays

	// A conn never reported is closed at AuthTimeout.
	rec2 := newRecorder()
	cfg2 := rec2.install(DefaultConfig())
	cfg2.HandshakeTimeout = time.Hour
	cfg2.AuthTimeout = 200 * time.Millisecond
	cfg2.AwaitAuth, cfg2.Inbound = true, &Inbound{}
	router2, addr2 := newRouter(t, cfg2)
	defer router2.Close()
	d := newDealer(t, cfg2, "d", addr2)
	defer d.Close()
	rec2.waitClosed(t, "d", ErrNotAuthenticated)
}

// The greeting a listener sends ahead of zmq4 is the one zmq4 writes:
// zmq4's own is swallowed, and the peer reads exactly one.
func TestPreAuth_OneGreetingReachesThePeer(t *testing.T) {
	cfg := DefaultConfig()
	router, addr := newRouter(t, cfg)
	defer router.Close()
	p := dialRaw(t, addr)
	p.handshake(t, "raw") // reads one greeting, then a READY
	p.write(t, frameBytes(0, []byte("hi")))
	within(t, "the router reads the raw peer", func() error {
		msg, err := router.Recv()
		if err != nil {
			return err
		}
		if string(msg.Frames[0]) != "raw" || string(msg.Frames[1]) != "hi" {
			return fmt.Errorf("got %q", msg.Frames)
		}
		return router.Send(zmq4.NewMsgFrom([]byte("raw"), []byte("back")))
	})
	_ = p.SetReadDeadline(time.Now().Add(waitDeadline))
	if got := p.readFrame(t); string(got) != "back" {
		t.Fatalf("raw peer read %q after the READY", got)
	}
}
