package zguard

import (
	"io"
	"testing"
	"time"
)

// libzmq sends the greeting of ZMTP 3 in stages: its 10-byte signature,
// then (after the peer's signature) its major version, then (after the
// peer's) the rest. The listener answers the signature with its whole
// greeting, so such a peer completes its handshake.
func TestListener_StagedGreeting(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = waitDeadline
	router, addr := newRouter(t, cfg)
	defer router.Close()
	p := dialRaw(t, addr)
	g := greetingBytes()
	_ = p.SetDeadline(time.Now().Add(waitDeadline / 2)) // well before the handshake deadline
	p.write(t, libzmqSignature())
	got := make([]byte, greetingLen)
	if _, err := io.ReadFull(p, got[:signatureLen+1]); err != nil {
		t.Fatalf("the listener did not answer a lone signature: %v", err)
	}
	p.write(t, g[signatureLen:signatureLen+1])
	p.write(t, g[signatureLen+1:])
	if _, err := io.ReadFull(p, got[signatureLen+1:]); err != nil || !validGreeting(got) || !nullGreeting(got) {
		t.Fatalf("listener greeting = %x, %v", got, err)
	}
	p.write(t, readyFrame("staged"))
	if body := p.readFrame(t); string(body[:6]) != "\x05READY" {
		t.Fatalf("listener READY = %q", body)
	}
	p.write(t, frameBytes(0, []byte("hi")))
	within(t, "the staged peer's message", func() error {
		msg, err := router.Recv()
		if err == nil && (string(msg.Frames[0]) != "staged" || string(msg.Frames[1]) != "hi") {
			t.Errorf("router got %q", msg.Frames)
		}
		return err
	})
}

// A READY claiming an identity a live connection holds is answered with a
// ZMTP ERROR command (reason "300") before zmq4 sends its READY, and the
// connection is closed; the live one is untouched.
func TestListener_DuplicateIdentityGetsError(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	router, addr := newRouter(t, cfg)
	defer router.Close()
	first := newDealer(t, cfg, "twin", addr)
	defer first.Close()
	exchange(t, router, first, "twin")

	p := dialRaw(t, addr)
	_ = p.SetDeadline(time.Now().Add(waitDeadline))
	p.write(t, greetingBytes())
	p.write(t, readyFrame("twin"))
	got := make([]byte, greetingLen)
	if _, err := io.ReadFull(p, got); err != nil || !validGreeting(got) {
		t.Fatalf("greeting = %x, %v", got, err)
	}
	if body := p.readFrame(t); string(body) != "\x05ERROR\x03300" {
		t.Fatalf("answer to a live identity = %q, want an ERROR command with reason 300", body)
	}
	p.waitClosed(t)
	ev := rec.waitRejected(t, ErrDuplicateIdentity)
	if ev.Identity != "twin" {
		t.Fatalf("rejected %+v, want identity twin", ev)
	}
	exchange(t, router, first, "twin")
}

// A peer whose READY has an empty identity gets a generated one, as
// libzmq's ROUTER gives it: a zero byte and 4 more, distinct per
// connection. Direct reads and sends use it.
func TestListener_EmptyIdentityIsGenerated(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	cfg.Inbound.ReadDirect(4)
	router, addr := newRouter(t, cfg)
	defer router.Close()
	ids := map[string]*rawPeer{}
	for i := range 2 {
		p := dialRaw(t, addr)
		p.handshake(t, "")
		p.write(t, frameBytes(0, []byte{byte('a' + i)}))
		var m Received
		within(t, "a message from an anonymous peer", func() error {
			m = <-cfg.Inbound.Messages()
			return m.Err
		})
		if len(m.Identity) != 5 || m.Identity[0] != 0 || ids[m.Identity] != nil {
			t.Fatalf("generated identity %x (have %d)", m.Identity, len(ids))
		}
		ids[m.Identity] = p
	}
	for id, p := range ids {
		if err := cfg.Inbound.Send([]byte(keyOf(cfg.Inbound, id)), []byte(id)); err != nil {
			t.Fatal(err)
		}
		_ = p.SetDeadline(time.Now().Add(waitDeadline))
		if body := p.readFrame(t); string(body) != id {
			t.Fatalf("peer %x got %x", id, body)
		}
	}
}

// A direct read answers a ZMTP 3.1 PING with a PONG carrying the PING's
// context, between two messages; the messages around it arrive.
func TestListener_DirectReadAnswersPing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Inbound = &Inbound{}
	cfg.Inbound.ReadDirect(4)
	router, addr := newRouter(t, cfg)
	defer router.Close()
	p := dialRaw(t, addr)
	p.handshake(t, "pinger")
	p.write(t, frameBytes(0, []byte("one")))
	p.write(t, frameBytes(flagCommand, []byte("\x04PING\x00\x0actx-123")))
	p.write(t, frameBytes(0, []byte("two")))
	_ = p.SetDeadline(time.Now().Add(waitDeadline))
	if body := p.readFrame(t); string(body) != "\x04PONGctx-123" {
		t.Fatalf("answer to PING = %q, want a PONG with its context", body)
	}
	for _, want := range []string{"one", "two"} {
		within(t, "message "+want, func() error {
			m := <-cfg.Inbound.Messages()
			if string(m.Frame) != want || m.Identity != "pinger" {
				t.Errorf("got %q from %q, want %q", m.Frame, m.Identity, want)
			}
			return m.Err
		})
	}
}

// With direct reads, the identity of a connection that delivered messages
// stays held after it closed until its owner lets it go (Disconnect): a
// new connection with the same identity waits for that, so the owner's
// Disconnect of the old one never closes the new one, and the new one's
// messages come after the old one's close.
func TestListener_ClosedIdentityHeldUntilOwnerLetsGo(t *testing.T) {
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.HandshakeTimeout = waitDeadline
	cfg.Inbound = &Inbound{}
	cfg.Inbound.ReadDirect(4)
	router, addr := newRouter(t, cfg)
	defer router.Close()
	old := dialRaw(t, addr)
	old.handshake(t, "again")
	old.write(t, frameBytes(0, []byte("old")))
	within(t, "the old connection's message", func() error { return (<-cfg.Inbound.Messages()).Err })
	_ = old.Close()
	rec.waitClosed(t, "again", io.EOF)

	p := dialRaw(t, addr)
	_ = p.SetDeadline(time.Now().Add(waitDeadline))
	p.write(t, greetingBytes())
	p.write(t, readyFrame("again"))
	got := make([]byte, greetingLen)
	if _, err := io.ReadFull(p, got); err != nil {
		t.Fatal(err)
	}
	if !cfg.Inbound.Disconnect(keyOf(cfg.Inbound, "again")) { // the owner lets the old one go
		t.Fatal("Disconnect found no connection for the held identity")
	}
	if body := p.readFrame(t); string(body[:6]) != "\x05READY" {
		t.Fatalf("new connection got %q, want the READY", body)
	}
	p.write(t, frameBytes(0, []byte("new")))
	within(t, "the new connection's message", func() error {
		m := <-cfg.Inbound.Messages()
		if m.Identity != "again" || string(m.Frame) != "new" {
			t.Errorf("got %q from %q", m.Frame, m.Identity)
		}
		return m.Err
	})
}
