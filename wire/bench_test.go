package wire

import (
	"strconv"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// benchBatch is 100 Request envelopes with 64-byte payloads.
func benchBatch() *Frame {
	payload := make([]byte, 64)
	for i := range payload {
		payload[i] = byte(i)
	}
	batch := make([]Envelope, 100)
	for i := range batch {
		batch[i] = Envelope{Kind: KindRequest, Corr: uint64(1_000_000 + i), Channel: "match",
			Packet: "JoinMatch", TimeoutMs: 5000, Payload: payload}
	}
	return &Frame{Type: FrameBatch, Batch: batch}
}

func BenchmarkWire_AppendBatch(b *testing.B) {
	f := benchBatch()
	b.Run("codec=hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			buf, err = AppendFrame(buf[:0], f)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
		b.ReportMetric(float64(len(f.Batch))*float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
	})
	b.Run("codec=msgpack-reflect", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			out, err := msgpack.Marshal(f)
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.SetBytes(int64(n))
		b.ReportMetric(float64(len(f.Batch))*float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
	})
}

func BenchmarkWire_DecodeBatch(b *testing.B) {
	f := benchBatch()
	enc, err := AppendFrame(nil, f)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("codec=hand", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := DecodeFrame(enc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(f.Batch))*float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
	})
	refl, err := msgpack.Marshal(f)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("codec=msgpack-reflect", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(refl)))
		for b.Loop() {
			var out Frame
			if err := msgpack.Unmarshal(refl, &out); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(f.Batch))*float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
	})
}

func BenchmarkEnvelope_Size(b *testing.B) {
	e := benchBatch().Batch[0]
	e.Headroom = map[string]uint32{"match": 10}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += e.Size()
	}
	if n == 0 {
		b.Fatal(strconv.Itoa(n))
	}
}
