package zguard

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// tryMsg is a TrySend message: room for the header, then body.
func tryMsg(body []byte) []byte { return append([]byte{0xEE, 0xEE}, body...) }

// A write that never blocks carries small messages both ways; a frame over
// 255 bytes, a connection not dialed yet and an unknown identity are
// refused without writing, for the caller's blocking send.
func TestTrySend_BothDirections(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	router, addr := newRouter(t, cfg)
	defer router.Close()

	out := &Outbound{}
	if sent, err := out.TrySend(tryMsg([]byte("early"))); sent || err != nil {
		t.Fatalf("TrySend before the dial = %v, %v; want false, nil", sent, err)
	}
	dcfg := DefaultConfig()
	dcfg.Outbound = out
	d := newDealer(t, dcfg, "D", addr)
	defer d.Close()
	hello(t, router, out)

	for _, size := range []int{0, 1, 200, 255} {
		body := bytes.Repeat([]byte{byte(size)}, size)
		within(t, fmt.Sprintf("dealer → router, %d bytes", size), func() error {
			if sent, err := out.TrySend(tryMsg(body)); !sent || err != nil {
				return fmt.Errorf("TrySend = %v, %v", sent, err)
			}
			msg, err := router.Recv()
			if err != nil {
				return err
			}
			if len(msg.Frames) != 2 || string(msg.Frames[1]) != string(body) {
				return fmt.Errorf("router got %d frames, %d bytes", len(msg.Frames), len(msg.Frames[len(msg.Frames)-1]))
			}
			return nil
		})
		within(t, fmt.Sprintf("router → dealer, %d bytes", size), func() error {
			if sent, err := cfg.Inbound.TrySend([]byte(keyOf(cfg.Inbound, "D")), tryMsg(body)); !sent || err != nil {
				return fmt.Errorf("TrySend = %v, %v", sent, err)
			}
			got, err := out.Recv()
			if err == nil && string(got) != string(body) {
				err = fmt.Errorf("dealer got %d bytes", len(got))
			}
			return err
		})
	}
	if sent, err := out.TrySend(tryMsg(make([]byte, 256))); sent || err != nil {
		t.Fatalf("TrySend of a 256-byte frame = %v, %v; want false, nil", sent, err)
	}
	if sent, err := cfg.Inbound.TrySend([]byte(keyOf(cfg.Inbound, "nobody")), tryMsg(nil)); sent || err != nil {
		t.Fatalf("TrySend to an unknown identity = %v, %v; want false, nil", sent, err)
	}
	// The blocking send still works after writes that never block.
	within(t, "blocking send after", func() error {
		if err := out.Send([]byte("after")); err != nil {
			return err
		}
		msg, err := router.Recv()
		if err == nil && string(msg.Frames[1]) != "after" {
			err = fmt.Errorf("got %q", msg.Frames[1])
		}
		return err
	})
}

// The blocking writes leave a write deadline behind; once it has passed
// (a connection at rest for longer than WriteTimeout), a write that never
// blocks still goes out, and the next blocking write still works.
func TestTrySend_AfterTheWriteDeadlinePassed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	router, addr := newRouter(t, cfg)
	defer router.Close()
	out := &Outbound{}
	dcfg := DefaultConfig()
	dcfg.Outbound = out
	dcfg.WriteTimeout = 20 * time.Millisecond
	d := newDealer(t, dcfg, "D", addr)
	defer d.Close()
	hello(t, router, out)

	for round := range 3 {
		within(t, fmt.Sprintf("blocking send %d", round), func() error {
			if err := out.Send([]byte("blocking")); err != nil {
				return err
			}
			_, err := router.Recv()
			return err
		})
		// Time must pass here: the deadline the blocking write set.
		time.Sleep(3 * dcfg.WriteTimeout)
		within(t, fmt.Sprintf("write that never blocks %d", round), func() error {
			if sent, err := out.TrySend(tryMsg([]byte("at rest"))); !sent || err != nil {
				return fmt.Errorf("TrySend after the deadline passed = %v, %v", sent, err)
			}
			msg, err := router.Recv()
			if err == nil && string(msg.Frames[1]) != "at rest" {
				err = fmt.Errorf("got %q", msg.Frames[1])
			}
			return err
		})
	}
}

// A peer that stops reading: writes that never block return at once until
// the socket is full, then report false; the one the kernel took in part
// is finished by the connection, so the peer, reading again, gets every
// message reported sent, whole and in order.
func TestTrySend_FullSocketNeverBlocks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	cfg.WriteTimeout = time.Minute
	router, addr := newRouter(t, cfg)
	defer router.Close()

	stuck := speakingPeer(t, router, addr, "A")

	sent := 0
	within(t, "writes until the socket is full", func() error {
		for {
			body := fmt.Appendf(bytes.Repeat([]byte{'x'}, 240), "%08d", sent)
			ok, err := cfg.Inbound.TrySend([]byte(keyOf(cfg.Inbound, "A")), tryMsg(body))
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			sent++
			if sent > 1<<20 {
				return errors.New("the socket never filled")
			}
		}
	})
	if sent == 0 {
		t.Fatal("no write went out")
	}
	within(t, "the stuck peer reads every message sent", func() error {
		_ = stuck.SetReadDeadline(time.Now().Add(waitDeadline))
		for i := range sent {
			got := stuck.readFrame(t)
			want := fmt.Appendf(bytes.Repeat([]byte{'x'}, 240), "%08d", i)
			if !bytes.Equal(got, want) {
				return fmt.Errorf("message %d of %d: got %q", i, sent, got[max(0, len(got)-8):])
			}
		}
		return nil
	})
	// Drained: the connection writes again, both ways.
	within(t, "write after the drain", func() error {
		for {
			ok, err := cfg.Inbound.TrySend([]byte(keyOf(cfg.Inbound, "A")), tryMsg([]byte("again")))
			if err != nil {
				return err
			}
			if ok {
				break
			}
			time.Sleep(time.Millisecond) // the flush of the partial message is under way
		}
		if got := stuck.readFrame(t); string(got) != "again" {
			return fmt.Errorf("got %q", got)
		}
		return nil
	})
}

// Under TLS the bytes must go through the TLS record layer: a write that
// never blocks writes nothing and leaves the message to the blocking send.
func TestTrySend_NotUnderTLS(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	raw, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(raw, tls.Client(raw, &tls.Config{InsecureSkipVerify: true}), true, DefaultConfig(), nil, time.Now())
	defer c.closeWith(ErrClosedLocally, false)
	if sent, err := c.tryWriteMessage(tryMsg([]byte("x"))); sent || err != nil {
		t.Fatalf("tryWriteMessage under TLS = %v, %v; want false, nil", sent, err)
	}
	p := newConn(raw, nil, false, DefaultConfig(), nil, time.Now())
	defer p.closeWith(ErrClosedLocally, false)
	if p.rc == nil {
		t.Fatal("a plain TCP conn has no descriptor for writes that never block")
	}
}

// hello makes the dialed side of out speak first, so that the router knows
// its identity (direct sends to it work from then on).
func hello(t *testing.T, router interface {
	Recv() (zmq4.Msg, error)
}, out *Outbound) {
	t.Helper()
	within(t, "hello", func() error {
		if err := out.Send([]byte("hello")); err != nil {
			return err
		}
		_, err := router.Recv()
		return err
	})
}
