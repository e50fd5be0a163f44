package zguard

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// typedClose reports whether reason is one of the typed ways a connection
// ends: a guard's or TLS refusal, zmq4 closing it, or the peer leaving.
func typedClose(reason error) bool {
	for _, e := range []error{ErrTLS, ErrBadGreeting, ErrMalformedCommand, ErrFrameTooLarge, ErrHandshakeTimeout,
		ErrDuplicateIdentity, ErrTooManyPending, ErrClosedLocally, io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.EPIPE} {
		if errors.Is(reason, e) {
			return true
		}
	}
	return false
}

// FuzzListenerGarbage sends arbitrary bytes to a guarded listener, with
// and without TLS, from a raw TCP client that then closes its side. Each
// connection ends, closed by the listener, with a typed reason; nothing
// panics; and the listener still serves a real peer afterwards. The seeds
// run in plain go test; run longer with
// go test -run '^$' -fuzz '^FuzzListenerGarbage$' -fuzztime 60s ./internal/zguard/
func FuzzListenerGarbage(f *testing.F) {
	greeting := greetingBytes()
	ready := frameBytes(flagCommand, readyBody(prop("Socket-Type", "DEALER"), prop("Identity", "g")))
	for _, s := range [][]byte{
		nil,
		{0x16},                                  // a lone TLS record type
		{0x16, 0x03, 0x01, 0xff, 0xff},          // a ClientHello header announcing 64 KiB
		{0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0}, // a truncated ClientHello
		{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28}, // an alert
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		greeting[:10],
		greeting,
		cat(greeting, ready),
		cat(greeting, frameBytes(flagCommand, []byte{9, 'R'})),               // a command name past the body
		cat(greeting, frameBytes(flagCommand, append(readyBody(), 10, 'I'))), // a truncated property
		cat(greeting, longHeader(flagCommand, 1<<40)),                        // a 1 TiB command
		cat(greeting, ready, longHeader(0, 1<<62)),                           // a huge frame after READY
		cat(greeting, ready, frameBytes(0, []byte("hello"))),
		cat([]byte{0xff, 1, 2, 3, 4, 5, 6, 7, 8, 0x00}, greeting[10:]), // a bad signature
		otherMechanism(greeting, "CURVE"),                              // a greeting zmq4 refuses
	} {
		f.Add(s, false)
		f.Add(s, true)
	}

	ca := tlstest.NewCA(f, "mesh CA")
	type side struct {
		router zmq4.Socket
		addr   string
		rec    *recorder
		dealer Config
	}
	sides := map[bool]*side{}
	for _, tlsOn := range []bool{false, true} {
		rec := newRecorder()
		scfg, dcfg := rec.install(DefaultConfig()), DefaultConfig()
		if tlsOn {
			var sr *recorder
			scfg, sr = tlsFor(f, ca.Pool(), ca.Issue(f, meshID).TLS, meshID)
			rec = sr
			dcfg, _ = tlsFor(f, ca.Pool(), ca.Issue(f, meshID).TLS, meshID)
		}
		scfg.HandshakeTimeout = 2 * time.Second
		router, addr := newRouter(f, scfg)
		f.Cleanup(func() { _ = router.Close() })
		sides[tlsOn] = &side{router: router, addr: addr, rec: rec, dealer: dcfg}
	}
	var seq atomic.Uint64
	f.Fuzz(func(t *testing.T, data []byte, tlsOn bool) {
		s := sides[tlsOn]
		c, err := net.DialTimeout("tcp", s.addr, waitDeadline)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		local := c.LocalAddr().String()
		_, _ = c.Write(data) // the listener may refuse before reading it all
		_ = c.(*net.TCPConn).CloseWrite()
		(&rawPeer{c}).waitClosed(t)
		var reason error
		s.rec.waitFor(t, "the close of "+local, func(closed, _ []ConnEvent) bool {
			for _, ev := range closed {
				if ev.Remote == local {
					reason = ev.Reason
					return true
				}
			}
			return false
		})
		if !typedClose(reason) {
			t.Fatalf("%q (TLS %v) closed with an untyped reason: %v", data, tlsOn, reason)
		}

		// The listener still serves a real peer.
		id := fmt.Sprintf("good-%d", seq.Add(1))
		d := newDealer(t, s.dealer, id, s.addr)
		defer d.Close()
		within(t, "a real peer's message", func() error {
			if err := d.Send(zmq4.NewMsgString("hi")); err != nil {
				return err
			}
			for {
				msg, err := s.router.Recv()
				if err != nil {
					return err
				}
				if len(msg.Frames) == 2 && string(msg.Frames[0]) == id {
					return nil
				}
			}
		})
	})
}

// otherMechanism returns greeting g naming another security mechanism.
func otherMechanism(g []byte, mech string) []byte {
	g = append([]byte{}, g...)
	clear(g[12:32])
	copy(g[12:32], mech)
	return g
}

// zmq4 refuses a greeting with another mechanism and drops the conn
// without closing it; the guard refuses such a greeting itself, at once,
// and frees its pending slot, so a real peer connects next.
func TestListener_RefusesAnotherMechanism(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = 10 * time.Second
	cfg.MaxPendingHandshakes = 1
	router, addr := newRouter(t, cfg)
	defer router.Close()
	p := dialRaw(t, addr)
	p.write(t, otherMechanism(greetingBytes(), "CURVE")) // and stays connected, silent
	ev := rec.waitRejected(t, ErrBadGreeting)
	if ev.Remote != p.LocalAddr().String() {
		t.Fatalf("rejected %v, want the CURVE peer %s", ev, p.LocalAddr())
	}
	p.waitClosed(t)
	d := newDealer(t, cfg, "next", addr)
	defer d.Close()
	exchange(t, router, d, "next")
}
