package wire

import (
	"errors"
	"reflect"
	"testing"
)

func TestBatchWriter_DecodesAsAppendFrame(t *testing.T) {
	envs := []Envelope{
		{Kind: KindRequest, Corr: 7, Channel: "echo", Packet: "p", TimeoutMs: 30000, Payload: []byte("hello")},
		{Kind: KindReply, Corr: 1 << 40, Payload: []byte{}, Headroom: map[string]uint32{"echo": 3}},
		{Kind: KindError, Corr: 9, Code: CodeBusy, Payload: []byte("busy")},
		{Kind: KindSend, Packet: "s"},
	}
	for n := 0; n <= len(envs); n++ {
		var w BatchWriter
		prefix := []byte("xyz")
		w.Reset(prefix)
		for i := range envs[:n] {
			w.Add(&envs[i])
		}
		got, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if string(got[:3]) != "xyz" {
			t.Fatalf("the prefix changed: %q", got[:3])
		}
		want, err := AppendFrame(nil, &Frame{Type: FrameBatch, Batch: envs[:n]})
		if err != nil {
			t.Fatal(err)
		}
		fg, err := DecodeFrame(got[3:])
		if err != nil {
			t.Fatalf("%d envelopes: %v", n, err)
		}
		fw, err := DecodeFrame(want)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fg, fw) {
			t.Fatalf("%d envelopes: decoded %+v, want %+v", n, fg, fw)
		}
	}
}

func TestBatchWriter_InvalidKindFails(t *testing.T) {
	var w BatchWriter
	w.Reset([]byte("ab"))
	w.Add(&Envelope{Kind: KindRequest, Packet: "p"})
	w.Add(&Envelope{})
	b, err := w.Finish()
	var de *DecodeError
	if !errors.As(err, &de) || string(b) != "ab" {
		t.Fatalf("Finish = %q, %v; want the buffer as before and a DecodeError", b, err)
	}
}
