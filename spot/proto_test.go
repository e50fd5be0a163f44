package spot

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/zlink-go/zlink/wire"
)

func TestHeader_RoundTrip(t *testing.T) {
	h := header{flags: flagHandoff, hops: 2, kind: "player", id: "p-42", packet: "pay",
		chain: []link{{act: 7, turn: 3}, {act: 1 << 40, turn: 9}}, body: []byte("body")}
	got, err := decodeHeader(h.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.flags != h.flags || got.hops != h.hops || got.kind != h.kind || got.id != h.id || got.packet != h.packet ||
		len(got.chain) != 2 || got.chain[1] != h.chain[1] || !bytes.Equal(got.body, h.body) {
		t.Fatalf("round trip: %+v", got)
	}
	for _, rep := range [][]byte{okReply(3, []byte("x")), routedReply("n1", 4, nil), redirectReply("n2", 0), retryReply("why"), errorReply(ErrCycle)} {
		if _, err := decodeReply(rep); err != nil {
			t.Fatalf("reply %q: %v", rep, err)
		}
	}
}

// Hostile Spot payloads end in an error, never a panic, and never make
// the decoder allocate beyond the input's size.
func FuzzDecodeHeader(f *testing.F) {
	f.Add((&header{kind: "k", id: "i", packet: "p", chain: []link{{1, 2}}, body: []byte("b")}).encode())
	f.Add([]byte{protoVersion, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{protoVersion, 0, 0, 1, 'k', 1, 'i', 0, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			return
		}
		if h.kind == "" || h.id == "" || len(h.chain) > maxChain || len(h.kind)+len(h.id)+len(h.packet) > len(b) {
			t.Fatalf("accepted a bad header: %+v", h)
		}
		again, err := decodeHeader(h.encode())
		if err != nil || again.kind != h.kind || again.id != h.id || !bytes.Equal(again.body, h.body) {
			t.Fatalf("re-encoding changed it: %+v %v", again, err)
		}
	})
}

func FuzzDecodeReply(f *testing.F) {
	f.Add(okReply(1, []byte("x")))
	f.Add(redirectReply("n", 2))
	f.Add(errorReply(ErrFenced))
	f.Add(notHostedReply("n", "room"))
	f.Add([]byte{stError, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := decodeReply(b)
		if err != nil {
			return
		}
		if len(rep.owner)+len(rep.msg)+len(rep.body) > len(b) {
			t.Fatalf("reply larger than its input: %+v", rep)
		}
		if rep.status == stError {
			_ = rep.err()
		}
	})
}

// "Kind not hosted" is error no_target with a detail after the message:
// this version reads the detail; a reader that stops at the message (an
// older version) sees a plain no_target error.
func TestReply_NotHosted(t *testing.T) {
	b := notHostedReply("os-1", "room")
	rep, err := decodeReply(b)
	if err != nil || rep.status != stError || rep.code != wire.CodeNoTarget || rep.detail != detailNotHosted {
		t.Fatalf("not hosted: %+v %v", rep, err)
	}
	if e := rep.err(); !errors.Is(e, ErrNoTarget) || !strings.Contains(e.Error(), "does not host kind room") {
		t.Fatalf("not hosted as an error: %v", e)
	}
	// An older reader: status, code and message, nothing after.
	r := reader{b: b[1:]}
	if code, msg := wire.Code(r.uvarint()), r.string(1<<20); r.err != nil || code != wire.CodeNoTarget || msg == "" || len(r.b) == 0 {
		t.Fatalf("older reader: code %v msg %q rest %q %v", code, msg, r.b, r.err)
	}
	// A plain error has no detail; bytes a later version appends after
	// the detail are ignored, and a detail that does not decode is none.
	if rep, err := decodeReply(errorReply(ErrNoTarget)); err != nil || rep.detail != 0 {
		t.Fatalf("plain no_target: %+v %v", rep, err)
	}
	if rep, err := decodeReply(append(bytes.Clone(b), 0x07, 0x01)); err != nil || rep.detail != detailNotHosted {
		t.Fatalf("with more bytes after the detail: %+v %v", rep, err)
	}
	bad := append(bytes.Clone(b[:len(b)-1]), 0x80)
	if rep, err := decodeReply(bad); err != nil || rep.detail != 0 {
		t.Fatalf("a detail that does not decode: %+v %v", rep, err)
	}
}
