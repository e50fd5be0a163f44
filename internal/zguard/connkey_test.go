package zguard

import (
	"errors"
	"testing"
	"time"
)

func TestSplitKey(t *testing.T) {
	for _, c := range []struct {
		key    string
		id     string
		serial uint64
		ok     bool
	}{
		{"P#7", "P", 7, true},
		{"a#b#12", "a#b", 12, true}, // an identity may hold '#'
		{"\x00\x01#3", "\x00\x01", 3, true},
		{"#1", "", 1, true},
		{"P", "", 0, false},
		{"P#", "", 0, false},
		{"P#1a", "", 0, false},
		{"P#99999999999999999999", "", 0, false},
	} {
		id, n, ok := splitKey(c.key)
		if ok != c.ok || (ok && (id != c.id || n != c.serial)) {
			t.Errorf("splitKey(%q) = %q %d %v, want %q %d %v", c.key, id, n, ok, c.id, c.serial, c.ok)
		}
		if bid, bn, bok := splitKey([]byte(c.key)); bok != ok || string(bid) != string(id) || bn != n {
			t.Errorf("splitKey([]byte(%q)) differs from the string form", c.key)
		}
		if ok && ConnKey(id, n) != c.key {
			t.Errorf("ConnKey(%q, %d) = %q, want %q", id, n, ConnKey(id, n), c.key)
		}
	}
}

// A peer that reconnects with the same identity gets a new key: the old
// key's close event names the old connection only, and sends, tries and
// disconnects by the old key never reach the new connection.
func TestConnKey_ReconnectedIdentityIsANewKey(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.Inbound = &Inbound{}
	cfg.Inbound.ReadDirect(4)
	router, addr := newRouter(t, cfg)
	defer router.Close()
	in := cfg.Inbound

	next := func(what string) Received {
		t.Helper()
		select {
		case m := <-in.Messages():
			return m
		case <-time.After(waitDeadline):
			t.Fatalf("%s: no message", what)
		}
		return Received{}
	}
	p1 := dialRaw(t, addr)
	p1.handshake(t, "P")
	p1.write(t, frameBytes(0, []byte("one")))
	m1 := next("first connection")
	if KeyIdentity(m1.Key) != "P" || m1.Identity != "P" {
		t.Fatalf("first message: identity %q key %q", m1.Identity, m1.Key)
	}
	_ = p1.Close()
	rec.waitFor(t, "the first connection's close", func(closed, _ []ConnEvent) bool {
		for _, ev := range closed {
			if ev.Key == m1.Key {
				return true
			}
		}
		return false
	})
	// The closed connection held its identity (it spoke): its owner lets
	// it go by key.
	if !in.Disconnect(m1.Key) {
		t.Fatal("DisconnectKey of the closed, held connection found nothing")
	}

	p2 := dialRaw(t, addr)
	defer p2.Close()
	p2.handshake(t, "P")
	p2.write(t, frameBytes(0, []byte("two")))
	m2 := next("second connection")
	if m2.Key == m1.Key || KeyIdentity(m2.Key) != "P" || string(m2.Frame) != "two" {
		t.Fatalf("second message: key %q (first %q), frame %q", m2.Key, m1.Key, m2.Frame)
	}
	if err := in.Send([]byte(m1.Key), []byte("stale")); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("SendKey by the old key = %v, want ErrNotConnected", err)
	}
	msg := make([]byte, 2+5)
	copy(msg[2:], "stale")
	if sent, err := in.TrySend([]byte(m1.Key), msg); sent || err != nil {
		t.Fatalf("TrySendKey by the old key = %v %v, want false", sent, err)
	}
	if in.Disconnect(m1.Key) || in.Authenticated(m1.Key) {
		t.Fatal("the old key found the new connection")
	}
	within(t, "a send by the new key", func() error {
		if err := in.Send([]byte(m2.Key), []byte("back")); err != nil {
			return err
		}
		_ = p2.SetReadDeadline(time.Now().Add(waitDeadline))
		if got := p2.readFrame(t); string(got) != "back" {
			return errors.New("got " + string(got))
		}
		return nil
	})
	if !p2.stillOpen() {
		t.Fatal("the new connection was closed")
	}
}

// Finding a connection by key, as every send to an inbound connection
// does, allocates nothing.
func TestKeyed_AllocatesNothing(t *testing.T) {
	c := &conn{serial: 7}
	in := &Inbound{ls: []*listener{{live: map[string]*conn{"P": c}}}}
	key := []byte(ConnKey("P", 7))
	if _, got := in.keyed(key); got != c {
		t.Fatal("the key did not find its connection")
	}
	if n := testing.AllocsPerRun(100, func() { in.keyed(key) }); n != 0 {
		t.Fatalf("keyed allocates %v times", n)
	}
}
