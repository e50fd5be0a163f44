package memnet

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zlink-go/zlink/routemesh/internal/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type closedEv struct {
	id  string
	err error
}

// pair binds a listener on host "b" and dials it from host "a".
func pair(t *testing.T, n *Network) (transport.Listener, transport.Conn, chan closedEv) {
	t.Helper()
	evs := make(chan closedEv, 8)
	ln, err := n.Host("b").Listen("tcp://127.0.0.1:0", transport.Events{OnClosed: func(id string, err error) {
		evs <- closedEv{id, err}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	c, err := n.Host("a").Dial(context.Background(), "tcp://"+ln.Addr().String(), "pipe-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return ln, c, evs
}

func recvL(t *testing.T, ln transport.Listener) string {
	t.Helper()
	id, f, err := ln.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return id + ":" + string(f)
}

func TestRoundTripCopiesAndAddressesByIdentity(t *testing.T) {
	n := New(1)
	ln, c, _ := pair(t, n)
	buf := []byte("hello")
	if err := c.Send(buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "xxxxx") // the caller may reuse its buffer
	if got := recvL(t, ln); got != "pipe-1:hello" {
		t.Fatalf("listener got %q", got)
	}
	if err := ln.Send([]byte("nobody"), []byte("lost")); err != nil {
		t.Fatalf("send to an unknown identity: %v, want a silent drop", err)
	}
	if err := ln.Send([]byte("pipe-1"), []byte("back")); err != nil {
		t.Fatal(err)
	}
	if f, err := c.Recv(); err != nil || string(f) != "back" {
		t.Fatalf("conn got %q, %v", f, err)
	}
	if _, err := n.Host("a").Dial(context.Background(), "tcp://"+ln.Addr().String(), "pipe-1"); !errors.Is(err, ErrDuplicateIdentity) {
		t.Fatalf("second dial with a live identity: %v", err)
	}
	if _, err := n.Host("a").Dial(context.Background(), "tcp://127.0.0.1:1", "x"); !errors.Is(err, ErrRefused) {
		t.Fatalf("dial to nothing: %v", err)
	}
	if _, err := n.Host("a").Listen("udp://x", transport.Events{}); !errors.Is(err, transport.ErrBadEndpoint) {
		t.Fatalf("bad endpoint: %v", err)
	}
}

func TestCutOneDirection(t *testing.T) {
	n := New(1)
	ln, c, _ := pair(t, n)
	n.Cut("b", "a")
	_ = ln.Send([]byte("pipe-1"), []byte("dropped"))
	_ = c.Send([]byte("passes"))
	if got := recvL(t, ln); got != "pipe-1:passes" {
		t.Fatalf("a→b got %q", got)
	}
	if _, err := n.Host("a").Dial(context.Background(), "tcp://"+ln.Addr().String(), "pipe-2"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("dial across a cut: %v", err)
	}
	n.Heal("a", "b")
	_ = ln.Send([]byte("pipe-1"), []byte("after heal"))
	if f, _ := c.Recv(); string(f) != "after heal" {
		t.Fatalf("b→a after heal got %q (the dropped frame must stay dropped)", f)
	}
	if cs := n.Counts(); cs.Dropped != 1 || cs.Delivered != 2 {
		t.Fatalf("counts %+v", cs)
	}
}

func TestHoldReordersBehindTheNextFrame(t *testing.T) {
	n := New(1)
	ln, c, _ := pair(t, n)
	n.SetFilter(func(p Packet) Verdict {
		if p.From == "a" && p.Seq == 1 {
			return Hold
		}
		return Deliver
	})
	_ = c.Send([]byte("1"))
	_ = c.Send([]byte("2"))
	if a, b := recvL(t, ln), recvL(t, ln); a != "pipe-1:2" || b != "pipe-1:1" {
		t.Fatalf("order %q, %q; want 2 then 1", a, b)
	}
	// A held frame with no successor is released after HoldMax.
	n.SetFaults("a", "b", Faults{HoldMax: time.Millisecond})
	n.SetFilter(func(p Packet) Verdict { return Hold })
	_ = c.Send([]byte("3"))
	if got := recvL(t, ln); got != "pipe-1:3" {
		t.Fatalf("got %q", got)
	}
}

// The same seed makes the same random decisions for the same sends.
func TestSeededDropsAreReproducible(t *testing.T) {
	run := func(seed uint64) []string {
		n := New(seed)
		ln, c, _ := pair(t, n)
		n.SetFaults("a", "b", Faults{Drop: 0.5})
		for i := range 64 {
			_ = c.Send([]byte{byte('0' + i%10)})
		}
		_ = c.Send([]byte("end"))
		n.Heal("a", "b")
		_ = c.Send([]byte("end"))
		var got []string
		for {
			s := recvL(t, ln)
			if s == "pipe-1:end" {
				return got
			}
			got = append(got, s)
		}
	}
	a, b, other := run(7), run(7), run(8)
	if len(a) == 0 || len(a) == 64 {
		t.Fatalf("drop 0.5 kept %d of 64", len(a))
	}
	if len(a) != len(b) {
		t.Fatalf("seed 7 kept %d then %d frames", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 differs at %d", i)
		}
	}
	if len(other) == len(a) {
		same := true
		for i := range a {
			same = same && a[i] == other[i]
		}
		if same {
			t.Fatal("seeds 7 and 8 made the same decisions")
		}
	}
}

func TestCloseAndBreakReport(t *testing.T) {
	n := New(1)
	ln, c, evs := pair(t, n)
	if n.Conns("a", "b") != 1 {
		t.Fatalf("conns = %d", n.Conns("a", "b"))
	}
	n.Break("a", "b")
	if _, err := c.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Recv after a reset: %v", err)
	}
	if ev := <-evs; ev.id != "pipe-1" {
		t.Fatalf("closed event %+v", ev)
	}
	if err := c.Send([]byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send after a reset: %v", err)
	}
	c2, err := n.Host("a").Dial(context.Background(), "tcp://"+ln.Addr().String(), "pipe-2")
	if err != nil {
		t.Fatal(err)
	}
	_ = c2.Close()
	if ev := <-evs; ev.id != "pipe-2" {
		t.Fatalf("closed event %+v", ev)
	}
	c3, err := n.Host("a").Dial(context.Background(), "tcp://"+ln.Addr().String(), "pipe-3")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	if _, err := c3.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Recv after the listener closed: %v", err)
	}
	if _, _, err := ln.Recv(); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("listener Recv after Close: %v", err)
	}
	if n.Conns("a", "b") != 0 {
		t.Fatalf("conns left: %d", n.Conns("a", "b"))
	}
}
