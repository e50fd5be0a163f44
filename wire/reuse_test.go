package wire

import (
	"errors"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
)

func heartbeatFrame(t *testing.T, envs ...Envelope) []byte {
	t.Helper()
	b, err := AppendFrame(nil, &Frame{Type: FrameBatch, Batch: envs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A peer's heartbeats decoded one after another with the same Maps: the
// same channels each time allocate nothing, and each decode gives what
// DecodeFrame gives.
func TestDecodeFrameReusing_SameChannelsAllocateNothing(t *testing.T) {
	hb := Envelope{Kind: KindHeartbeat, Generation: 9, Revision: 4, Seq: 1,
		Servers: map[string]uint16{"chat": 3, "match": 10}, Headroom: map[string]uint32{"chat": 5, "match": 0}}
	raw := heartbeatFrame(t, hb)
	var (
		m     Maps
		f     Frame
		batch = make([]Envelope, 0, 4)
	)
	decode := func() {
		if err := DecodeFrameReusing(&f, raw, batch, &m); err != nil {
			t.Fatal(err)
		}
	}
	decode()
	if allocs := testing.AllocsPerRun(100, decode); allocs != 0 {
		t.Fatalf("decoding a heartbeat with the channels of the last allocates %.1f times; want 0", allocs)
	}
	want, err := DecodeFrame(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, &f) {
		t.Fatalf("reused decode %+v, want %+v", f, want)
	}
}

// Channels that come and go, weights that change, several heartbeats and
// other envelopes in one frame: every decode with the same Maps equals
// DecodeFrame's, and maps of other kinds (a reply's headroom) are their
// own — a later decode does not change them.
func TestDecodeFrameReusing_MatchesDecodeFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "chat", "match", "zone-1", "zone-2"}
	randMap := func() map[string]uint16 {
		if rng.IntN(8) == 0 {
			return nil
		}
		m := map[string]uint16{}
		for _, n := range names {
			if rng.IntN(2) == 0 {
				m[n] = uint16(rng.IntN(100))
			}
		}
		return m
	}
	var m Maps
	var f Frame
	var keptReply map[string]uint32
	var keptWant map[string]uint32
	for round := range 500 {
		var envs []Envelope
		for range 1 + rng.IntN(4) {
			s := randMap()
			var h map[string]uint32
			if s != nil {
				h = map[string]uint32{}
				for k, v := range s {
					h[k] = uint32(v) * 3
				}
			}
			kind := KindHeartbeat
			if rng.IntN(4) == 0 {
				kind = KindReply
			}
			envs = append(envs, Envelope{Kind: kind, Generation: 1, Revision: uint64(round), Servers: s, Headroom: h, Seq: uint64(round)})
		}
		raw := heartbeatFrame(t, envs...)
		want, err := DecodeFrame(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := DecodeFrameReusing(&f, raw, nil, &m); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, &f) {
			t.Fatalf("round %d: reused decode\n%+v\nwant\n%+v", round, f.Batch, want.Batch)
		}
		if keptReply != nil && !maps.Equal(keptReply, keptWant) {
			t.Fatalf("round %d: a reply's headroom decoded earlier changed: %v, want %v", round, keptReply, keptWant)
		}
		keptReply, keptWant = nil, nil
		for _, e := range f.Batch {
			if e.Kind == KindReply && e.Headroom != nil {
				keptReply, keptWant = e.Headroom, maps.Clone(e.Headroom)
			}
		}
	}
}

// A heartbeat with a key twice is refused as DecodeFrame refuses it,
// whatever the Maps held, and the Maps decodes the next one right.
func TestDecodeFrameReusing_DuplicateKey(t *testing.T) {
	var m Maps
	var f Frame
	good := heartbeatFrame(t, Envelope{Kind: KindHeartbeat, Generation: 1, Headroom: map[string]uint32{"a": 1, "b": 2}})
	if err := DecodeFrameReusing(&f, good, nil, &m); err != nil {
		t.Fatal(err)
	}
	// The same frame with the key "b" spelled "a": ["a", "a"].
	bad := append([]byte(nil), good...)
	for i := len(bad) - 1; i >= 0; i-- {
		if bad[i] == 'b' {
			bad[i] = 'a'
			break
		}
	}
	_, want := DecodeFrame(bad)
	err := DecodeFrameReusing(&f, bad, nil, &m)
	if want == nil || err == nil || !errors.Is(err, ErrProtocol) || err.Error() != want.Error() {
		t.Fatalf("duplicate key: DecodeFrameReusing %v, DecodeFrame %v", err, want)
	}
	if err := DecodeFrameReusing(&f, good, nil, &m); err != nil {
		t.Fatal(err)
	}
	if h := f.Batch[0].Headroom; len(h) != 2 || h["a"] != 1 || h["b"] != 2 {
		t.Fatalf("after a refused frame: %v", h)
	}
}

// A map larger than a Maps keeps is decoded into a map of its own (the
// Maps holds nothing of it), and decodes right either way.
func TestDecodeFrameReusing_LargeMapNotKept(t *testing.T) {
	big := map[string]uint32{}
	for i := range maxReusedEntries + 1 {
		big[string(rune('A'+i%26))+string(rune('a'+i/26))] = uint32(i)
	}
	raw := heartbeatFrame(t, Envelope{Kind: KindHeartbeat, Generation: 1, Headroom: big})
	var m Maps
	var f Frame
	if err := DecodeFrameReusing(&f, raw, nil, &m); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(f.Batch[0].Headroom, big) {
		t.Fatalf("decoded %d entries, want %d", len(f.Batch[0].Headroom), len(big))
	}
	if m.headroom[0].m != nil || m.nh != 0 {
		t.Fatal("a map over the limit was kept by the Maps")
	}
}
