package zguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// FuzzListenerPreHandshake drives a guarded listener's pre-handshake path
// with arbitrary bytes and connection timings: the bytes go out in chunks
// with pauses (cuts: one byte per chunk, its low 5 bits the chunk's size,
// its high 3 bits the pause before it in 5 ms steps), and the client then
// closes, half-closes, or waits for the listener (ending % 3). With bit 2
// of ending the client greets as libzmq does (the staged greeting of ZMTP
// 3): it sends the first 10 bytes, waits for the listener's first 10, sends
// the 11th, waits for the listener's 11th, then sends the rest as cut. Whatever it does, its
// connection ends with a typed reason, and its pending slot is freed: the
// listener has one slot in all, and a real peer from the same source
// connects next. The seeds run in plain go test; run longer with
// go test -run '^$' -fuzz '^FuzzListenerPreHandshake$' -fuzztime 60s ./internal/zguard/
func FuzzListenerPreHandshake(f *testing.F) {
	g := greetingBytes()
	ready := readyFrame("fz")
	for _, s := range []struct {
		data   []byte
		cuts   []byte
		ending uint8
	}{
		{nil, nil, 2},                                                  // silent: the first-byte timeout
		{g[:1], nil, 2},                                                // one byte, then silent
		{g, []byte{0xe0 | 9, 31}, 2},                                   // a greeting in two paced chunks
		{cat(g, ready), []byte{31, 0x40 | 31}, 0},                      // greeting, pause, READY, close
		{cat(g, ready), nil, 2},                                        // a whole handshake, left to zmq4
		{cat(g, longHeader(flagCommand, 1<<40)), nil, 1},               // a huge command, half-closed
		{[]byte{0x16, 0x03, 0x01, 0x00, 0x05}, []byte{2, 0x60 | 3}, 2}, // a stalled ClientHello
		{cat(g, ready), nil, 4 | 2},                                    // libzmq's staged greeting, handshake
		{g[:10], nil, 4 | 2},                                           // a signature, then silent
		{libzmqSignature(), nil, 4 | 0},                                // libzmq's signature, then closed
		{cat(libzmqSignature(), g[10:], ready), []byte{3, 31}, 4 | 2},  // staged, then paced
	} {
		f.Add(s.data, s.cuts, s.ending, false)
		f.Add(s.data, s.cuts, s.ending, true)
	}
	ca := tlstest.NewCA(f, "mesh CA")
	type side struct {
		addr   string
		rec    *recorder
		dealer Config
		router interface{ Close() error }
	}
	sides := map[bool]*side{}
	for _, tlsOn := range []bool{false, true} {
		rec := newRecorder()
		scfg, dcfg := rec.install(DefaultConfig()), DefaultConfig()
		if tlsOn {
			scfg, rec = tlsFor(f, ca.Pool(), ca.Issue(f, meshID).TLS, meshID)
			dcfg, _ = tlsFor(f, ca.Pool(), ca.Issue(f, meshID).TLS, meshID)
		}
		// Short enough for a few runs a second, long enough that the real
		// peer's TLS ClientHello beats the first-byte timeout on a loaded
		// machine running two fuzz workers (300 ms was seen to miss).
		scfg.HandshakeTimeout = 2 * time.Second
		scfg.FirstByteTimeout = time.Second
		scfg.MaxPendingHandshakes, scfg.ReservedForKnown = 1, -1
		router, addr := newRouter(f, scfg)
		f.Cleanup(func() { _ = router.Close() })
		sides[tlsOn] = &side{addr: addr, rec: rec, dealer: dcfg, router: router}
	}
	var seq atomic.Uint64
	f.Fuzz(func(t *testing.T, data, cuts []byte, ending uint8, tlsOn bool) {
		if len(data) > 1<<16 || len(cuts) > 64 {
			return
		}
		s := sides[tlsOn]
		c, err := net.DialTimeout("tcp", s.addr, waitDeadline)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		local := c.LocalAddr().String()
		rest := data
		if ending&4 != 0 {
			rest = stagedGreeting(c, rest)
		}
		for _, cut := range cuts {
			if len(rest) == 0 {
				break
			}
			time.Sleep(time.Duration(cut>>5) * 5 * time.Millisecond) // the timing under test
			n := min(int(cut&31)+1, len(rest))
			if _, err := c.Write(rest[:n]); err != nil {
				break // the listener may refuse before reading it all
			}
			rest = rest[n:]
		}
		if len(rest) > 0 {
			_, _ = c.Write(rest)
		}
		switch ending % 3 {
		case 0:
			_ = c.Close()
		case 1:
			_ = c.(*net.TCPConn).CloseWrite()
		default: // wait for the listener; a handshake it completed stays open
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = c.Read(make([]byte, 1<<16))
			_ = c.Close()
		}
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
			t.Fatalf("%q (cuts %v, ending %d, TLS %v) closed with an untyped reason: %v", data, cuts, ending, tlsOn, reason)
		}
		// Its slot is free: a real peer from the same source gets the only one.
		goodPeer(t, s.rec, s.dealer, s.addr, fmt.Sprintf("good-%d", seq.Add(1)))
	})
}

// goodPeer dials a real peer that must get the listener's only pending
// slot. A refusal for want of a slot fails the test; a dial that lost only
// a race with the listener's first-byte or handshake timeout (a loaded
// machine stalled the peer past them) is tried again, a few times.
func goodPeer(t *testing.T, rec *recorder, cfg Config, addr, id string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		closedBefore, _ := rec.snapshot()
		d := zmq4.NewDealer(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity(id)),
			zmq4.WithDialerMaxRetries(0), zmq4.WithLogger(discardLogger()))
		err := d.Dial(Scheme + "://" + addr)
		_ = d.Close()
		if err == nil {
			// Its dial can return before the listener's side of the
			// handshake ended (the slot still held); the next case must
			// find the slot free, so wait for the listener's close of this
			// connection (the slot is released before it is reported) —
			// the only connection in flight, so the next close is its.
			rec.waitFor(t, "the listener's close of "+id, func(closed, _ []ConnEvent) bool {
				return len(closed) > len(closedBefore)
			})
			return
		}
		// The failed connection's close says why (the fuzz case's is
		// already recorded; a slow close of an earlier good peer may come
		// first, so look for the reason that decides).
		var why error
		rec.waitFor(t, "the close of "+id+"'s failed dial", func(closed, _ []ConnEvent) bool {
			for _, ev := range closed[len(closedBefore):] {
				switch {
				case errors.Is(ev.Reason, ErrTooManyPending), errors.Is(ev.Reason, ErrTooManyFromSource):
					why = ev.Reason
					return true
				case errors.Is(ev.Reason, ErrHandshakeTimeout):
					return true
				}
			}
			return false
		})
		if why != nil {
			t.Fatalf("dial %s: %v: the listener refused it a slot: %v", id, err, why)
		}
		if attempt == 5 {
			t.Fatalf("dial %s: %v (the listener's timeouts beat it %d times)", id, err, attempt)
		}
	}
}

// stagedGreeting sends data's greeting as libzmq does, in stages: the
// first 10 bytes, then (once the listener's first 10 came) the 11th, then
// (once the listener's 11th came) nothing more: it returns what is left
// to send. It stops early when the listener sends nothing in time or
// closes.
func stagedGreeting(c net.Conn, data []byte) []byte {
	got := 0
	buf := make([]byte, greetingLen)
	for _, stage := range []int{signatureLen, signatureLen + 1} {
		n := min(stage, len(data))
		if _, err := c.Write(data[:n]); err != nil {
			return nil
		}
		data = data[n:]
		if n < stage || len(data) == 0 {
			return data
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		for got < stage {
			k, err := c.Read(buf[got:])
			got += k
			if err != nil {
				_ = c.SetReadDeadline(time.Time{})
				return data
			}
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return data
}

// libzmqSignature is the first 10 bytes libzmq sends: its padding holds
// the length of its routing id + 1 (here an empty one).
func libzmqSignature() []byte {
	return []byte{sigHeader, 0, 0, 0, 0, 0, 0, 0, 1, sigFooter}
}
