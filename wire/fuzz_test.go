package wire

import (
	"bytes"
	"reflect"
	"runtime"
	"testing"
)

// allocatedBytes returns the heap bytes f allocated. Nothing else runs in
// the test binary while a fuzz input is decoded, so the figure is f's.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// decodeAllocBound is the most DecodeFrame may allocate for an input of n
// bytes: the largest decoded value per input byte is an Envelope (128 bytes)
// per two input bytes, plus map buckets and a constant for the Frame.
func decodeAllocBound(n int) uint64 { return 96*uint64(n) + 4096 }

func frameSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	var all []byte
	for _, f := range sampleFrames() {
		b, err := AppendFrame(nil, f)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
		all = append(all, b...)
	}
	batch := seeds[4]
	for i := range batch { // truncated at every length
		seeds = append(seeds, batch[:i])
	}
	for i := 0; i+16 <= len(all); i += 16 { // chunks of a stream of frames
		seeds = append(seeds, all[i:i+16])
	}
	seeds = append(seeds,
		all, // concatenated frames
		append(append([]byte{}, batch...), batch...),
		// bin32 payload claiming 4 GiB in a 20-byte input
		[]byte{0x93, 0x01, 0x05, 0x91, 0x96, 0x01, 0, 0xa0, 0xa0, 0, 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5},
		// array32 claiming 2^32-1 envelopes
		[]byte{0x93, 0x01, 0x05, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x91, 0x01},
		// map32 claiming 2^32-1 headroom entries
		[]byte{0x93, 0x01, 0x05, 0x91, 0x98, 0x05, 0, 0xa0, 0xa0, 0, 0xc0, 0, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0x00},
		// str32 channel claiming 4 GiB
		[]byte{0x93, 0x01, 0x05, 0x91, 0x93, 0x01, 0, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		// capabilities array32 claiming 2^32-1 strings inside a hello
		append(append([]byte{}, seeds[0][:len(seeds[0])/2]...), 0xdd, 0xff, 0xff, 0xff, 0xff),
		// future version and unknown type
		[]byte{0x93, 0x02, 0x05, 0x90},
		[]byte{0x93, 0x01, 0x06, 0x90},
	)
	return seeds
}

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range frameSeeds(f) {
		f.Add(s)
	}
	var maps Maps // kept from input to input: each refill starts from the last
	f.Fuzz(func(t *testing.T, in []byte) {
		var fr *Frame
		var err error
		n := allocatedBytes(func() { fr, err = DecodeFrame(in) })
		if n > decodeAllocBound(len(in)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(in), n)
		}
		// Refilling the heartbeats' maps decodes exactly the same.
		var reused Frame
		rerr := DecodeFrameReusing(&reused, in, nil, &maps)
		if (rerr == nil) != (err == nil) || err != nil && rerr.Error() != err.Error() {
			t.Fatalf("DecodeFrameReusing: %v; DecodeFrame: %v", rerr, err)
		}
		if err == nil && !reflect.DeepEqual(fr, &reused) {
			t.Fatalf("DecodeFrameReusing differs:\n%#v\n%#v", fr, &reused)
		}
		if err != nil {
			if fr != nil {
				t.Fatal("frame returned with an error")
			}
			return
		}
		// Decoded sizes are bounded by the input.
		if fr.Type == FrameBatch && 2*len(fr.Batch) > len(in) {
			t.Fatalf("%d envelopes from %d bytes", len(fr.Batch), len(in))
		}
		// Re-encoding is stable: encode(decode(in)) decodes to the same frame
		// and encodes to the same bytes again.
		b1, err := AppendFrame(nil, fr)
		if err != nil {
			t.Fatalf("re-encode of a decoded frame failed: %v", err)
		}
		if len(b1) > len(in) {
			t.Fatalf("canonical encoding %d bytes longer than input %d", len(b1), len(in))
		}
		fr2, err := DecodeFrame(b1)
		if err != nil {
			t.Fatalf("decode of re-encoded frame: %v", err)
		}
		if !reflect.DeepEqual(fr, fr2) {
			t.Fatalf("re-decode differs:\n%#v\n%#v", fr, fr2)
		}
		b2, err := AppendFrame(nil, fr2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("re-encoding not stable: %v", err)
		}
	})
}

func FuzzDecodePayload(f *testing.F) {
	good, err := joinPacket.EncodeRequest(joinMatch{Player: "p", Level: 3, Tags: []string{"a", "b"}, Stats: map[string]int32{"k": -1}})
	if err != nil {
		f.Fatal(err)
	}
	reply, _ := joinPacket.EncodeReply(joinResult{MatchID: 1, Seat: 2})
	f.Add(good)
	f.Add(reply)
	for i := range good {
		f.Add(good[:i])
	}
	f.Add(append(append([]byte{}, good...), good...))
	f.Add([]byte{0x81, 0xa6, 'P', 'l', 'a', 'y', 'e', 'r', 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0x81, 0xa4, 'T', 'a', 'g', 's', 0xdd, 0xff, 0xff, 0xff, 0xff, 0xa0})
	f.Add([]byte{0x81, 0xa5, 'S', 't', 'a', 't', 's', 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0x00})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0x91})
	f.Fuzz(func(t *testing.T, in []byte) {
		var v joinMatch
		var err error
		n := allocatedBytes(func() { v, err = joinPacket.DecodeRequest(in) })
		// msgpack's reflection decoder costs more per input byte than ours,
		// but it must stay proportional to the input.
		if bound := 512*uint64(len(in)) + 64<<10; n > bound {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(in), n)
		}
		var anyV any
		n = allocatedBytes(func() { _ = decodePayload(in, &anyV) })
		if bound := 512*uint64(len(in)) + 64<<10; n > bound {
			t.Fatalf("decoding %d bytes into any allocated %d bytes", len(in), n)
		}
		if err != nil {
			return
		}
		b, err := joinPacket.EncodeRequest(v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		v2, err := joinPacket.DecodeRequest(b)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("re-decode: %#v vs %#v (%v)", v, v2, err)
		}
	})
}
