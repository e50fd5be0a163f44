package fault_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/zlink-go/zlink/test/fault"
)

// link is one connection through a proxy: the client's side and the
// target's side, both plain net.Conns of the test.
type link struct {
	p              *fault.Proxy
	client, target net.Conn
}

func newLink(t *testing.T) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	p, err := fault.New(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	client, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	target, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	waitConns(t, p, 1) // the proxy holds the pair (Reset reaches it)
	return &link{p: p, client: client, target: target}
}

// send writes msg on from and reads it whole on to.
func send(t *testing.T, from, to net.Conn, msg string) {
	t.Helper()
	if _, err := from.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	_ = to.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(to, got); err != nil || string(got) != msg {
		t.Fatalf("read %q %v, want %q", got, err, msg)
	}
}

// quiet checks that nothing arrives on c for a while (a held direction
// never delivers, so a short look suffices; it cannot pass wrongly late).
func quiet(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	n, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v) from a held direction", n, err)
	}
}

func TestProxy_PassesBothWays(t *testing.T) {
	l := newLink(t)
	send(t, l.client, l.target, "ping")
	send(t, l.target, l.client, "pong")
	if l.p.Conns() != 1 || l.p.Accepted() != 1 {
		t.Fatalf("conns %d accepted %d", l.p.Conns(), l.p.Accepted())
	}
}

// A partition holds the bytes; the heal delivers every one, in order,
// as TCP would once the network is back.
func TestProxy_PartitionHoldsAndHealDelivers(t *testing.T) {
	l := newLink(t)
	l.p.Partition()
	if _, err := l.client.Write([]byte("up-1 ")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.target.Write([]byte("down-1 ")); err != nil {
		t.Fatal(err)
	}
	quiet(t, l.target)
	quiet(t, l.client)
	if _, err := l.client.Write([]byte("up-2")); err != nil {
		t.Fatal(err)
	}
	l.p.Heal()
	got := make([]byte, len("up-1 up-2"))
	_ = l.target.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(l.target, got); err != nil || string(got) != "up-1 up-2" {
		t.Fatalf("after the heal the target read %q %v", got, err)
	}
	got = make([]byte, len("down-1 "))
	_ = l.client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(l.client, got); err != nil || string(got) != "down-1 " {
		t.Fatalf("after the heal the client read %q %v", got, err)
	}
	send(t, l.client, l.target, "again")
}

// A held direction reads nothing, so a sender that keeps writing blocks
// once the buffers are full; every byte it did write arrives after the
// heal.
func TestProxy_HoldBacksUpTheSender(t *testing.T) {
	l := newLink(t)
	l.p.CutUp()
	chunk := make([]byte, 64<<10)
	var sent bytes.Buffer
	_ = l.client.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	for i := 0; ; i++ {
		for j := range chunk {
			chunk[j] = byte(i + j)
		}
		n, err := l.client.Write(chunk)
		sent.Write(chunk[:n])
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
		if sent.Len() > 256<<20 {
			t.Fatal("256 MiB written into a held direction without blocking")
		}
	}
	l.p.Heal()
	got := make([]byte, sent.Len())
	_ = l.target.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(l.target, got); err != nil || !bytes.Equal(got, sent.Bytes()) {
		t.Fatalf("after the heal: %v, %d bytes equal: %v", err, len(got), bytes.Equal(got, sent.Bytes()))
	}
}

func TestProxy_CutOneDirection(t *testing.T) {
	t.Run("up", func(t *testing.T) {
		l := newLink(t)
		l.p.CutUp()
		send(t, l.target, l.client, "heard")
		_, _ = l.client.Write([]byte("x"))
		quiet(t, l.target)
	})
	t.Run("down", func(t *testing.T) {
		l := newLink(t)
		l.p.CutDown()
		send(t, l.client, l.target, "heard")
		_, _ = l.target.Write([]byte("x"))
		quiet(t, l.client)
	})
}

func TestProxy_DropDiscards(t *testing.T) {
	l := newLink(t)
	l.p.Set(fault.Drop, fault.Pass)
	if _, err := l.client.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	quiet(t, l.target)
	l.p.Heal()
	send(t, l.client, l.target, "kept") // "lost" never arrives
}

func TestProxy_ResetEndsHeldConnections(t *testing.T) {
	l := newLink(t)
	l.p.Partition()
	_, _ = l.client.Write([]byte("held"))
	l.p.Reset()
	for _, c := range []net.Conn{l.client, l.target} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 8)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("after Reset a side read %d bytes, %v; want the connection closed", n, err)
		}
	}
	waitConns(t, l.p, 0)
}

// waitConns waits (with a deadline) until p has n connections open.
func waitConns(t *testing.T, p *fault.Proxy, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Conns() != n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := p.Conns(); got != n {
		t.Fatalf("%d connections open through the proxy, want %d", got, n)
	}
}

// Throttled, 64 KiB at 128 KiB/s cannot take less than about half a
// second (a lower bound only: a slow machine cannot make it fail).
func TestProxy_Throttle(t *testing.T) {
	l := newLink(t)
	l.p.Throttle(128 << 10)
	msg := bytes.Repeat([]byte("t"), 64<<10)
	start := time.Now()
	go func() { _, _ = l.client.Write(msg) }()
	got := make([]byte, len(msg))
	_ = l.target.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(l.target, got); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("64 KiB through a 128 KiB/s throttle in %v", d)
	}
	l.p.Throttle(0)
	send(t, l.client, l.target, "fast again")
}

func TestProxy_DelayKeepsOrder(t *testing.T) {
	l := newLink(t)
	l.p.Delay(20 * time.Millisecond)
	for _, m := range []string{"a", "b", "c"} {
		send(t, l.client, l.target, m)
	}
}
