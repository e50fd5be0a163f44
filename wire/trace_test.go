package wire

import (
	"bytes"
	"testing"
)

// sampleTrace is a W3C-shaped trace context: trace id, span id, flags.
func sampleTrace() string {
	t := make([]byte, 25)
	for i := range t {
		t[i] = byte(i + 1)
	}
	return string(t)
}

// An envelope without a trace context is written exactly as before the
// trace field existed; with one, the trace is the 14th field.
func TestEnvelope_TraceFieldOnlyWhenSet(t *testing.T) {
	e := Envelope{Kind: KindRequest, Corr: 5, Channel: "match", Packet: "JoinMatch", TimeoutMs: 100, Payload: []byte("p")}
	var plain encoder
	plain.envelope(&e)
	e.Trace = sampleTrace()
	var traced encoder
	traced.envelope(&e)
	if traced.b[0] != 0x9e { // fixarray of 14
		t.Fatalf("traced request header = %#x, want 0x9e", traced.b[0])
	}
	if !bytes.HasSuffix(traced.b, append([]byte{mpBin8, 25}, sampleTrace()...)) || len(traced.b) != len(plain.b)+7+2+25 { // 7 zero fields, the bin header, the trace
		t.Fatalf("traced request does not end with its trace: % x", traced.b)
	}
	if !bytes.Equal(plain.b[1:], traced.b[1:len(plain.b)]) {
		t.Fatal("the fields before the trace changed")
	}
	if e.Size() < len(traced.b) {
		t.Fatalf("Size() = %d < encoded %d", e.Size(), len(traced.b))
	}
}
