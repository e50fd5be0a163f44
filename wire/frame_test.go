package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

func sampleIdentity(rid string) Identity {
	return Identity{
		Mesh:             "game-mesh",
		RID:              rid,
		Generation:       0x1234_5678_9abc,
		Revision:         3,
		ObjectRole:       2,
		Servers:          map[string]uint16{"match": 100, "lobby": 0, "chat": MaxWeight},
		SecurityIdentity: NewTrust("shared", []byte("s3cret")).SecurityIdentity(),
		Endpoint:         "tcp://10.0.0.5:7001",
		Protocol:         ProtocolVersion,
		Capabilities:     []string{"batch", "headroom"},
		RecvLimit:        64 << 20,
		Draining:         true,
	}
}

func sampleEnvelopes() []Envelope {
	return []Envelope{
		{Kind: KindRequest, Corr: 1, Channel: "match", Packet: "JoinMatch", TimeoutMs: 5000, Payload: []byte{0x81, 0xa1, 'a', 1}},
		{Kind: KindSend, Channel: "lobby", Packet: "Chat", Payload: []byte("hello")},
		{Kind: KindReply, Corr: 1, Payload: []byte{0xc0}, Headroom: map[string]uint32{"match": 17}},
		{Kind: KindError, Corr: 2, Code: CodeBusy, Payload: []byte("channel match full")},
		{Kind: KindHeartbeat, Generation: 9, Revision: 4, Headroom: map[string]uint32{"match": 0, "lobby": math.MaxUint32}, Draining: true, Seq: math.MaxUint64},
		{Kind: KindWeightUpdate, Generation: 9, Revision: 5, Servers: map[string]uint16{"match": 0, "lobby": 250}},
		{Kind: KindDrain, Draining: true},
		{Kind: KindGoodbye},
		{Kind: KindRequest, Corr: math.MaxUint64, Packet: "Ping", Payload: []byte{}},               // node direct, empty payload
		{Kind: KindHeartbeat, Headroom: map[string]uint32{}, Servers: map[string]uint16{}, Seq: 1}, // empty, not nil
		{Kind: KindRequest, Corr: 3, Channel: "match", Packet: "JoinMatch", TimeoutMs: 5000, Payload: []byte{0xc0}, Trace: sampleTrace()},
		{Kind: KindSend, Packet: "Chat", Trace: sampleTrace()}, // trace after zero fields
	}
}

func sampleFrames() []*Frame {
	h := &Hello{Identity: sampleIdentity("game-a"), ExpectRID: "game-b", ConfigGeneration: 7}
	for i := range h.Nonce {
		h.Nonce[i] = byte(i + 1)
	}
	w := &Welcome{Identity: sampleIdentity("game-b")}
	w.Servers = nil
	w.Capabilities = nil
	w.Draining = false
	w.Nonce[0], w.Proof[31] = 0xff, 0xee
	a := &Auth{}
	a.Proof[0] = 1
	return []*Frame{
		{Type: FrameHello, Hello: h},
		{Type: FrameWelcome, Welcome: w},
		{Type: FrameAuth, Auth: a},
		{Type: FrameReject, Reject: &Reject{Reason: RejectStaleGeneration, Detail: "generation 3 < 4"}},
		{Type: FrameBatch, Batch: sampleEnvelopes()},
		{Type: FrameBatch, Batch: sampleEnvelopes()[:1]},
	}
}

func TestFrame_RoundTrip(t *testing.T) {
	for _, f := range sampleFrames() {
		t.Run(f.Type.String(), func(t *testing.T) {
			b, err := AppendFrame(nil, f)
			if err != nil {
				t.Fatalf("AppendFrame: %v", err)
			}
			got, err := DecodeFrame(b)
			if err != nil {
				t.Fatalf("DecodeFrame: %v", err)
			}
			if !reflect.DeepEqual(got, f) {
				t.Fatalf("round trip mismatch:\n got %+v\nwant %+v", got, f)
			}
			b2, err := AppendFrame([]byte("prefix"), got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b2[len("prefix"):], b) || string(b2[:6]) != "prefix" {
				t.Fatal("encoding is not deterministic or does not append")
			}
		})
	}
}

func TestEnvelope_RoundTripEachKind(t *testing.T) {
	for _, e := range sampleEnvelopes() {
		t.Run(e.Kind.String(), func(t *testing.T) {
			f := &Frame{Type: FrameBatch, Batch: []Envelope{e}}
			b, err := AppendFrame(nil, f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Batch[0], e) {
				t.Fatalf("got %+v want %+v", got.Batch[0], e)
			}
			// Size is an upper bound of the envelope's share of the frame.
			empty, _ := AppendFrame(nil, &Frame{Type: FrameBatch})
			if enc := len(b) - len(empty); e.Size() < enc {
				t.Fatalf("Size() = %d < encoded %d", e.Size(), enc)
			}
		})
	}
}

func TestEnvelope_TrailingZeroFieldsOmitted(t *testing.T) {
	e := Envelope{Kind: KindRequest, Corr: 5, Channel: "match", Packet: "JoinMatch", TimeoutMs: 100, Payload: []byte("p")}
	var enc encoder
	enc.envelope(&e)
	if enc.b[0] != 0x96 { // fixarray of 6: kind..payload
		t.Fatalf("request header = %#x, want 0x96", enc.b[0])
	}
	enc = encoder{}
	enc.envelope(&Envelope{Kind: KindGoodbye})
	if !bytes.Equal(enc.b, []byte{0x91, byte(KindGoodbye)}) {
		t.Fatalf("goodbye = % x", enc.b)
	}
}

func TestDecodeFrame_Errors(t *testing.T) {
	valid, err := AppendFrame(nil, sampleFrames()[4])
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		in      []byte
		version bool // expect ErrVersion too
	}{
		{"empty", nil, false},
		{"not array", []byte{0x01}, false},
		{"short header", []byte{0x91, 0x01}, false},
		{"future version", []byte{0x93, 0x02, 0x05, 0x90}, true},
		{"future version, other layout", []byte{0x95, 0x02, 0x05, 0x90, 0xc0, 0xc0}, true},
		{"unknown frame type", []byte{0x93, 0x01, 0x3f, 0x90}, true},
		{"extra field", []byte{0x94, 0x01, 0x05, 0x90, 0xc0}, false},
		{"trailing bytes", append(append([]byte{}, valid...), 0x00), false},
		{"two frames", append(append([]byte{}, valid...), valid...), false},
		{"zero kind", []byte{0x93, 0x01, 0x05, 0x91, 0x91, 0x00}, false},
		{"kind out of range", []byte{0x93, 0x01, 0x05, 0x91, 0x91, 0x09}, false},
		{"negative fixint", []byte{0x93, 0x01, 0x05, 0x91, 0x92, 0x01, 0xff}, false},
		{"negative int8", []byte{0x93, 0x01, 0x05, 0x91, 0x92, 0x01, 0xd0, 0xff}, false},
		{"negative int64", []byte{0x93, 0x01, 0x05, 0x91, 0x92, 0x01, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, false},
		{"envelope too many fields", append([]byte{0x93, 0x01, 0x05, 0x91, 0xdc, 0x00, 15, 0x01}, bytes.Repeat([]byte{0}, 14)...), false},
		{"trace too long", append([]byte{0x93, 0x01, 0x05, 0x91, 0x9e, 0x02, 0, 0xa0, 0xa0, 0, 0xc0, 0, 0xc0, 0, 0, 0xc0, 0xc2, 0, 0xc4, MaxTraceLen + 1},
			bytes.Repeat([]byte{7}, MaxTraceLen+1)...), false},
		{"duplicate map key", []byte{0x93, 0x01, 0x05, 0x91, 0x98, 0x05, 0, 0xa0, 0xa0, 0, 0xc0, 0, 0x82, 0xa1, 'x', 1, 0xa1, 'x', 2}, false},
		{"weight over max", []byte{0x93, 0x01, 0x05, 0x91, 0x9b, 0x06, 0, 0xa0, 0xa0, 0, 0xc0, 0, 0xc0, 0, 0, 0x81, 0xa1, 'x', 0xcd, 0x27, 0x11}, false},
		{"reject zero reason", []byte{0x93, 0x01, 0x04, 0x92, 0x00, 0xa0}, false},
		{"auth short proof", []byte{0x93, 0x01, 0x03, 0x91, 0xc4, 0x01, 0x00}, false},
		{"bin32 claims 4GiB", []byte{0x93, 0x01, 0x05, 0x91, 0x96, 0x01, 0, 0xa0, 0xa0, 0, 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5}, false},
		{"array32 claims 2^32-1 envelopes", []byte{0x93, 0x01, 0x05, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x91, 0x01}, false},
		{"map32 claims 2^32-1 entries", []byte{0x93, 0x01, 0x05, 0x91, 0x98, 0x05, 0, 0xa0, 0xa0, 0, 0xc0, 0, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0x00}, false},
		{"str32 claims 4GiB", []byte{0x93, 0x01, 0x05, 0x91, 0x93, 0x01, 0, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := DecodeFrame(tc.in)
			if err == nil {
				t.Fatalf("decoded garbage into %+v", f)
			}
			t.Log(err)
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
			if got := errors.Is(err, ErrVersion); got != tc.version {
				t.Fatalf("errors.Is(%v, ErrVersion) = %v, want %v", err, got, tc.version)
			}
		})
	}
}

func TestDecodeFrame_InvalidIdentity(t *testing.T) {
	mutations := map[string]func(*Identity){
		"zero generation":      func(id *Identity) { id.Generation = 0 },
		"zero revision":        func(id *Identity) { id.Revision = 0 },
		"empty mesh":           func(id *Identity) { id.Mesh = "" },
		"empty rid":            func(id *Identity) { id.RID = "" },
		"no security identity": func(id *Identity) { id.SecurityIdentity = "" },
		"security id is rid":   func(id *Identity) { id.SecurityIdentity = id.RID },
		"weight over max":      func(id *Identity) { id.Servers = map[string]uint16{"x": MaxWeight + 1} },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			h := &Hello{Identity: sampleIdentity("a")}
			mutate(&h.Identity)
			if _, err := AppendFrame(nil, &Frame{Type: FrameHello, Hello: h}); !errors.Is(err, ErrProtocol) {
				t.Fatalf("AppendFrame accepted an invalid identity: %v", err)
			}
			// Encode a valid one and patch the identity in by hand, bypassing
			// the encoder's check, to exercise the decoder's.
			e := encoder{}
			e.arrayHeader(frameFields)
			e.uint(uint64(ProtocolVersion))
			e.uint(uint64(FrameHello))
			e.arrayHeader(helloFields)
			e.identity(&h.Identity)
			e.bin(h.Nonce[:])
			e.string("")
			e.uint(0)
			if _, err := DecodeFrame(e.b); !errors.Is(err, ErrProtocol) {
				t.Fatalf("DecodeFrame accepted an invalid identity: %v", err)
			}
		})
	}
}

func TestAppendFrame_BodyMustMatchType(t *testing.T) {
	bad := []*Frame{
		{Type: FrameHello},
		{Type: FrameAuth, Reject: &Reject{Reason: RejectAuth}},
		{Type: FrameBatch, Auth: &Auth{}},
		{Type: FrameReject, Reject: &Reject{}},
		{Type: FrameBatch, Batch: []Envelope{{Kind: 0}}},
		{Type: FrameBatch, Batch: []Envelope{{Kind: kindEnd}}},
		{Type: 0},
		{Type: frameTypeEnd},
	}
	for _, f := range bad {
		dst := []byte("keep")
		out, err := AppendFrame(dst, f)
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("AppendFrame(%+v) err = %v, want ErrProtocol", f, err)
		}
		if string(out) != "keep" {
			t.Fatalf("AppendFrame changed dst on error: %q", out)
		}
	}
}

func TestDecodeFrame_AcceptsNonCanonicalIntegers(t *testing.T) {
	// A batch with one Goodbye, every integer in a wider form than needed.
	in := []byte{0x93, 0xcd, 0x00, 0x01, 0xd0, 0x05, 0xdc, 0x00, 0x01, 0x91, 0xcf, 0, 0, 0, 0, 0, 0, 0, byte(KindGoodbye)}
	f, err := DecodeFrame(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Batch) != 1 || f.Batch[0].Kind != KindGoodbye {
		t.Fatalf("got %+v", f)
	}
}

func TestDecodeFrame_PayloadAliasesInputAndStringsAreInterned(t *testing.T) {
	f := &Frame{Type: FrameBatch, Batch: []Envelope{
		{Kind: KindSend, Channel: "match", Packet: "P", Payload: []byte("abc")},
		{Kind: KindSend, Channel: "match", Packet: "P", Payload: []byte("def")},
	}}
	b, err := AppendFrame(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Batch[0].Payload
	if cap(p) != len(p) {
		t.Fatalf("payload capacity %d leaks into the rest of the frame", cap(p))
	}
	i := bytes.Index(b, []byte("abc"))
	b[i] = 'X'
	if string(got.Batch[0].Payload) != "Xbc" {
		t.Fatal("payload does not alias the input as documented")
	}
	if got.Batch[1].Payload = append(got.Batch[1].Payload, 'z'); !bytes.Contains(b, []byte("def")) {
		t.Fatal("appending to a payload overwrote the frame")
	}
	if s0, s1 := got.Batch[0].Channel, got.Batch[1].Channel; s0 != s1 || !sameString(s0, s1) {
		t.Fatal("repeated channel names are not shared")
	}
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestFrame_Property_RoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame().Draw(t, "frame")
		b, err := AppendFrame(nil, f)
		if err != nil {
			t.Fatalf("AppendFrame: %v", err)
		}
		got, err := DecodeFrame(b)
		if err != nil {
			t.Fatalf("DecodeFrame: %v", err)
		}
		if !reflect.DeepEqual(got, f) {
			t.Fatalf("round trip mismatch:\n got %#v\nwant %#v", got, f)
		}
		if f.Type == FrameBatch {
			sum := 0
			for i := range f.Batch {
				sum += f.Batch[i].Size()
			}
			if sum+16 < len(b) {
				t.Fatalf("sum of Size() %d below encoded batch %d", sum, len(b))
			}
		}
	})
}

func genNil[T any](g *rapid.Generator[T]) *rapid.Generator[T] {
	return rapid.Custom(func(t *rapid.T) T {
		if rapid.Bool().Draw(t, "nil") {
			var zero T
			return zero
		}
		return g.Draw(t, "value")
	})
}

func genWeights() *rapid.Generator[map[string]uint16] {
	return genNil(rapid.MapOfN(rapid.String(), rapid.Uint16Range(0, MaxWeight), 0, 20))
}

func genIdentity() *rapid.Generator[Identity] {
	return rapid.Custom(func(t *rapid.T) Identity {
		id := Identity{
			Mesh:             rapid.StringN(1, 40, -1).Draw(t, "mesh"),
			RID:              rapid.StringN(1, 40, -1).Draw(t, "rid"),
			Generation:       rapid.Uint64Min(1).Draw(t, "gen"),
			Revision:         rapid.Uint64Min(1).Draw(t, "rev"),
			ObjectRole:       rapid.Uint8().Draw(t, "role"),
			Servers:          genWeights().Draw(t, "servers"),
			SecurityIdentity: "shared:" + rapid.String().Draw(t, "sec"),
			Endpoint:         rapid.String().Draw(t, "ep"),
			Protocol:         rapid.Uint16().Draw(t, "proto"),
			Capabilities:     genNil(rapid.SliceOfN(rapid.String(), 0, 5)).Draw(t, "caps"),
			RecvLimit:        rapid.Uint64Range(0, MaxFrameSize).Draw(t, "limit"),
			Draining:         rapid.Bool().Draw(t, "draining"),
		}
		if id.SecurityIdentity == id.RID {
			id.RID += "x"
		}
		return id
	})
}

func genEnvelope() *rapid.Generator[Envelope] {
	return rapid.Custom(func(t *rapid.T) Envelope {
		return Envelope{
			Kind:       Kind(rapid.IntRange(1, int(kindEnd)-1).Draw(t, "kind")),
			Corr:       rapid.Uint64().Draw(t, "corr"),
			Channel:    rapid.OneOf(rapid.Just(""), rapid.Just("match"), rapid.String()).Draw(t, "channel"),
			Packet:     rapid.OneOf(rapid.Just(""), rapid.Just("JoinMatch"), rapid.String()).Draw(t, "packet"),
			TimeoutMs:  rapid.Uint32().Draw(t, "timeout"),
			Code:       Code(rapid.Uint16().Draw(t, "code")),
			Payload:    genNil(rapid.SliceOfN(rapid.Byte(), 0, 300)).Draw(t, "payload"),
			Generation: rapid.Uint64().Draw(t, "gen"),
			Revision:   rapid.Uint64().Draw(t, "rev"),
			Servers:    genWeights().Draw(t, "servers"),
			Headroom:   genNil(rapid.MapOfN(rapid.String(), rapid.Uint32(), 0, 20)).Draw(t, "headroom"),
			Draining:   rapid.Bool().Draw(t, "draining"),
			Seq:        rapid.OneOf(rapid.Just[uint64](0), rapid.Uint64()).Draw(t, "seq"),
			Trace:      string(rapid.SliceOfN(rapid.Byte(), 0, MaxTraceLen).Draw(t, "trace")),
		}
	})
}

func genFrame() *rapid.Generator[*Frame] {
	return rapid.Custom(func(t *rapid.T) *Frame {
		nonce := func(label string) (n [16]byte) {
			copy(n[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
			return n
		}
		proof := func(label string) (p [32]byte) {
			copy(p[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, label))
			return p
		}
		switch FrameType(rapid.IntRange(1, int(frameTypeEnd)-1).Draw(t, "type")) {
		case FrameHello:
			return &Frame{Type: FrameHello, Hello: &Hello{
				Identity: genIdentity().Draw(t, "id"), Nonce: nonce("nonce"),
				ExpectRID: rapid.String().Draw(t, "expect"), ConfigGeneration: rapid.Uint64().Draw(t, "cfg"),
			}}
		case FrameWelcome:
			return &Frame{Type: FrameWelcome, Welcome: &Welcome{
				Identity: genIdentity().Draw(t, "id"), Nonce: nonce("nonce"), Proof: proof("proof"),
			}}
		case FrameAuth:
			return &Frame{Type: FrameAuth, Auth: &Auth{Proof: proof("proof")}}
		case FrameReject:
			return &Frame{Type: FrameReject, Reject: &Reject{
				Reason: RejectReason(rapid.Uint8Min(1).Draw(t, "reason")), Detail: rapid.String().Draw(t, "detail"),
			}}
		default:
			return &Frame{Type: FrameBatch, Batch: rapid.SliceOfN(genEnvelope(), 1, 40).Draw(t, "batch")}
		}
	})
}

func TestEnums_String(t *testing.T) {
	var names []string
	for k := Kind(1); k < kindEnd; k++ {
		names = append(names, "kind:"+k.String())
	}
	for ft := FrameType(1); ft < frameTypeEnd; ft++ {
		names = append(names, "frame:"+ft.String())
	}
	for r := RejectReason(1); r < rejectEnd; r++ {
		names = append(names, "reject:"+r.String())
	}
	seen := map[string]bool{}
	for _, n := range names {
		if strings.HasSuffix(n, ":") || strings.Contains(n, "(") || seen[n] {
			t.Fatalf("bad or duplicate name %q", n)
		}
		seen[n] = true
	}
	if len(names) != 8+5+14 {
		t.Fatalf("enum sizes changed: %d names", len(names))
	}
	if Kind(0).String() != "kind(0)" || FrameType(99).String() != "frame(99)" || RejectReason(0).String() != "reject(0)" {
		t.Fatal("unknown enum values are not named by number")
	}
}
