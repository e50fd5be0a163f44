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
