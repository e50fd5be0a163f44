package zguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// waitDeadline bounds every wait in these tests; nothing should come near it.
const waitDeadline = 10 * time.Second

// recorder collects ConnEvents from Config callbacks.
type recorder struct {
	mu       sync.Mutex
	changed  chan struct{}
	closed   []ConnEvent
	rejected []ConnEvent
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) install(cfg Config) Config {
	cfg.OnConnClosed = func(ev ConnEvent) { r.add(&r.closed, ev) }
	cfg.OnRejected = func(ev ConnEvent) { r.add(&r.rejected, ev) }
	return cfg
}

func (r *recorder) add(list *[]ConnEvent, ev ConnEvent) {
	r.mu.Lock()
	*list = append(*list, ev)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *recorder) snapshot() (closed, rejected []ConnEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ConnEvent(nil), r.closed...), append([]ConnEvent(nil), r.rejected...)
}

// waitRejected waits for a rejection matching reason and returns it.
func (r *recorder) waitRejected(t *testing.T, reason error) ConnEvent {
	t.Helper()
	var got ConnEvent
	r.waitFor(t, fmt.Sprintf("rejection %v", reason), func(_, rejected []ConnEvent) bool {
		for _, ev := range rejected {
			if errors.Is(ev.Reason, reason) {
				got = ev
				return true
			}
		}
		return false
	})
	return got
}

func (r *recorder) waitFor(t *testing.T, what string, cond func(closed, rejected []ConnEvent) bool) {
	t.Helper()
	timeout := time.NewTimer(waitDeadline)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		ok := cond(r.closed, r.rejected)
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			closed, rejected := r.snapshot()
			t.Fatalf("timed out waiting for %s; closed=%v rejected=%v", what, closed, rejected)
		}
	}
}

// newRouter starts a guarded ROUTER on a free loopback port.
func newRouter(t testing.TB, cfg Config) (zmq4.Socket, string) {
	t.Helper()
	Register()
	r := zmq4.NewRouter(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity("router")), zmq4.WithLogger(discardLogger()))
	if err := r.Listen(Scheme + "://127.0.0.1:0"); err != nil {
		t.Fatalf("listen: %v", err)
	}
	return r, r.Addr().String()
}

// newDealer dials a guarded DEALER with identity id to addr.
func newDealer(t *testing.T, cfg Config, id, addr string) zmq4.Socket {
	t.Helper()
	d := zmq4.NewDealer(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity(id)),
		zmq4.WithDialerMaxRetries(0), zmq4.WithLogger(discardLogger()))
	if err := d.Dial(Scheme + "://" + addr); err != nil {
		t.Fatalf("dial %s: %v", id, err)
	}
	return d
}

// within runs f and fails the test if it has not returned within
// waitDeadline.
func within(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(waitDeadline):
		t.Fatalf("%s: no result within %v", what, waitDeadline)
	}
}

// exchange makes the dealer say hello and the router answer it.
func exchange(t *testing.T, router, dealer zmq4.Socket, id string) {
	t.Helper()
	within(t, "dealer→router→dealer exchange "+id, func() error {
		if err := dealer.Send(zmq4.NewMsgString("hello " + id)); err != nil {
			return fmt.Errorf("dealer send: %w", err)
		}
		msg, err := router.Recv()
		if err != nil {
			return fmt.Errorf("router recv: %w", err)
		}
		if string(msg.Frames[0]) != id || string(msg.Frames[1]) != "hello "+id {
			return fmt.Errorf("router got %q", msg.Frames)
		}
		if err := router.Send(zmq4.NewMsgFrom([]byte(id), []byte("welcome "+id))); err != nil {
			return fmt.Errorf("router send: %w", err)
		}
		msg, err = dealer.Recv()
		if err != nil {
			return fmt.Errorf("dealer recv: %w", err)
		}
		if string(msg.Frames[0]) != "welcome "+id {
			return fmt.Errorf("dealer got %q", msg.Frames)
		}
		return nil
	})
}

// rawPeer is a hand-driven ZMTP 3 NULL client.
type rawPeer struct {
	net.Conn
}

func dialRaw(t *testing.T, addr string) *rawPeer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitDeadline)
	if err != nil {
		t.Fatalf("raw dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawPeer{c}
}

// handshake sends a greeting and READY (DEALER, identity) and reads the
// server's greeting and READY.
func (p *rawPeer) handshake(t *testing.T, identity string) {
	t.Helper()
	_ = p.SetDeadline(time.Now().Add(waitDeadline))
	defer p.SetDeadline(time.Time{})
	p.write(t, greetingBytes())
	p.write(t, frameBytes(flagCommand, readyBody(prop("Socket-Type", "DEALER"), prop("Identity", identity))))
	g := make([]byte, greetingLen)
	if _, err := io.ReadFull(p, g); err != nil || !validGreeting(g) {
		t.Fatalf("read greeting: %v %x", err, g)
	}
	body := p.readFrame(t)
	if !bytes.HasPrefix(body, []byte("\x05READY")) {
		t.Fatalf("server READY = %q", body)
	}
}

func (p *rawPeer) write(t *testing.T, b []byte) {
	t.Helper()
	if _, err := p.Write(b); err != nil {
		t.Fatalf("raw write: %v", err)
	}
}

func (p *rawPeer) readFrame(t *testing.T) []byte {
	t.Helper()
	h := make([]byte, 1, 9)
	if _, err := io.ReadFull(p, h); err != nil {
		t.Fatalf("read frame flags: %v", err)
	}
	h = h[:headerLen(h[0])]
	if _, err := io.ReadFull(p, h[1:]); err != nil {
		t.Fatalf("read frame length: %v", err)
	}
	var size uint64
	for _, b := range h[1:] {
		size = size<<8 | uint64(b)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(p, body); err != nil {
		t.Fatalf("read frame body: %v", err)
	}
	return body
}

// waitClosed waits until the server closed the raw conn (EOF or reset).
func (p *rawPeer) waitClosed(t *testing.T) {
	t.Helper()
	_ = p.SetReadDeadline(time.Now().Add(waitDeadline))
	_, err := io.Copy(io.Discard, p)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("raw conn still open after %v", waitDeadline)
	}
}

// stillOpen reports whether the server has not closed the raw conn: a read
// that times out at once means no EOF is queued.
func (p *rawPeer) stillOpen() bool {
	_ = p.SetReadDeadline(time.Now())
	defer p.SetReadDeadline(time.Time{})
	_, err := p.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }

// plainListener listens on a free loopback port with plain TCP (no guard)
// and hands over the first connection it accepts; the channel is closed
// after it (or at once when Accept fails). The listener closes at the end
// of t.
func plainListener(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			ch <- c
		}
		close(ch)
	}()
	return ln.Addr().String(), ch
}

// waitClosed waits until the connection that announced identity closed
// for reason.
func (r *recorder) waitClosed(t *testing.T, identity string, reason error) {
	t.Helper()
	r.waitFor(t, identity+" closed: "+reason.Error(), func(closed, _ []ConnEvent) bool {
		for _, ev := range closed {
			if ev.Identity == identity && errors.Is(ev.Reason, reason) {
				return true
			}
		}
		return false
	})
}

// recvCounting receives message i of a numbered sequence ("0", "1", …) on
// dealer d and says whether it is the one expected.
func recvCounting(d zmq4.Socket, i int) error {
	msg, err := d.Recv()
	if err != nil {
		return err
	}
	if got := string(msg.Frames[0]); got != fmt.Sprint(i) {
		return fmt.Errorf("B got %q, want %d", got, i)
	}
	return nil
}

// speakingPeer is a raw peer that completed the handshake as identity and
// said hello, received by router; it reads nothing unless the test does
// (a stuck peer).
func speakingPeer(t *testing.T, router zmq4.Socket, addr, identity string) *rawPeer {
	t.Helper()
	p := dialRaw(t, addr)
	p.handshake(t, identity)
	p.write(t, frameBytes(0, []byte("hi")))
	within(t, "router recv "+identity+"'s hello", func() error {
		msg, err := router.Recv()
		if err == nil && string(msg.Frames[0]) != identity {
			err = fmt.Errorf("got %q", msg.Frames)
		}
		return err
	})
	return p
}

// keyOf is the key of the inbound connection that holds identity (live,
// or closed and held), or a key that names no connection.
func keyOf(in *Inbound, identity string) string {
	if _, c := in.lookup([]byte(identity)); c != nil {
		return ConnKey(identity, c.serial)
	}
	return ConnKey(identity, 0)
}
