package wire

import (
	"errors"
	"reflect"
	"sync"
	"testing"
)

type joinMatch struct {
	Player string
	Level  int
	Tags   []string
	Stats  map[string]int32
}

type joinResult struct {
	MatchID uint64
	Seat    int
}

var joinPacket = NewPacket[joinMatch, joinResult]("JoinMatch")

func TestPacket_TypedRoundTrip(t *testing.T) {
	req := joinMatch{Player: "p1", Level: 30, Tags: []string{"eu"}, Stats: map[string]int32{"elo": 1500}}
	b, err := joinPacket.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := joinPacket.DecodeRequest(b)
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("request round trip: %+v, %v", got, err)
	}
	rb, err := joinPacket.EncodeReply(joinResult{MatchID: 7, Seat: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := joinPacket.DecodeReply(rb)
	if err != nil || rep != (joinResult{MatchID: 7, Seat: 2}) {
		t.Fatalf("reply round trip: %+v, %v", rep, err)
	}
	if joinPacket.Name() != "JoinMatch" {
		t.Fatal(joinPacket.Name())
	}
	// The wrong type: a reply decoded as a request and vice versa.
	if _, err := joinPacket.DecodeRequest(rb); !errors.Is(err, ErrBadPayload) {
		t.Fatalf("reply bytes decoded as request: %v", err)
	}
	if _, err := joinPacket.DecodeReply(b); !errors.Is(err, ErrBadPayload) {
		t.Fatalf("request bytes decoded as reply: %v", err)
	}
	for name, in := range map[string][]byte{
		"empty":    nil,
		"trailing": append(append([]byte{}, b...), 0xc0),
		"not map":  {0x05},
		"garbage":  {0xc1},
		"huge bin": {0x81, 0xa6, 'P', 'l', 'a', 'y', 'e', 'r', 0xc6, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, err := joinPacket.DecodeRequest(in); !errors.Is(err, ErrBadPayload) {
			t.Errorf("%s: err = %v, want ErrBadPayload", name, err)
		}
	}
}

// An empty packet (struct{}) decodes what it encodes without the decoder,
// and refuses anything else as before.
func TestPacket_Empty(t *testing.T) {
	p := NewPacket[struct{}, struct{}]("Empty")
	b, err := p.EncodeRequest(struct{}{})
	if err != nil || len(b) != 1 || b[0] != 0x80 {
		t.Fatalf("struct{} encodes as % x (%v), want the empty map 80", b, err)
	}
	if _, err := p.DecodeRequest(b); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DecodeReply(b); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"empty":    nil,
		"a field":  {0x81, 0xa1, 'x', 0x01},
		"trailing": {0x80, 0xc0},
		"not map":  {0x05},
	} {
		if _, err := p.DecodeRequest(in); !errors.Is(err, ErrBadPayload) {
			t.Errorf("%s: err = %v, want ErrBadPayload", name, err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = p.DecodeRequest(b) }); n != 0 {
		t.Errorf("%v allocations decoding an empty packet", n)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if err := Register(r, joinPacket); err != nil {
		t.Fatal(err)
	}
	if err := Register(r, NewPacket[joinMatch, joinResult]("JoinMatch")); err != nil {
		t.Fatalf("same types again: %v", err)
	}
	if err := Register(r, NewPacket[joinResult, joinMatch]("JoinMatch")); !errors.Is(err, ErrDuplicatePacket) {
		t.Fatalf("different types under one name: %v", err)
	}
	if err := Register(r, NewPacket[joinMatch, joinResult]("")); err == nil {
		t.Fatal("empty name registered")
	}
	pi, ok := r.Lookup("JoinMatch")
	if !ok || pi.Name != "JoinMatch" || pi.Request != reflect.TypeFor[joinMatch]() || pi.Reply != reflect.TypeFor[joinResult]() {
		t.Fatalf("Lookup = %+v, %v", pi, ok)
	}
	if _, ok := r.Lookup("Nope"); ok {
		t.Fatal("unknown packet found")
	}
	// Untyped path used by dispatch.
	b, err := pi.EncodeRequest(joinMatch{Player: "x"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := pi.DecodeRequest(b)
	if err != nil || v.(joinMatch).Player != "x" {
		t.Fatalf("DecodeRequest = %#v, %v", v, err)
	}
	rb, err := pi.EncodeReply(joinResult{Seat: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := pi.DecodeReply(rb); err != nil || v.(joinResult).Seat != 1 {
		t.Fatalf("DecodeReply = %#v, %v", v, err)
	}
	if _, err := pi.EncodeReply(joinMatch{}); !errors.Is(err, ErrBadPayload) {
		t.Fatalf("wrong reply type encoded: %v", err)
	}
	if _, err := pi.DecodeRequest(rb); !errors.Is(err, ErrBadPayload) {
		t.Fatalf("wrong payload decoded: %v", err)
	}
}

func TestRegistry_Concurrent(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := Register(r, joinPacket); err != nil {
				t.Error(err)
			}
			for range 100 {
				if _, ok := r.Lookup("JoinMatch"); !ok && i < 0 {
					t.Error("unreachable")
				}
			}
		})
	}
	wg.Wait()
	if _, ok := r.Lookup("JoinMatch"); !ok {
		t.Fatal("lost registration")
	}
}

func TestValidatePayload(t *testing.T) {
	deep := make([]byte, 0, 200)
	for range 100 {
		deep = append(deep, 0x91)
	}
	deep = append(deep, 0x00)
	cases := map[string]struct {
		in []byte
		ok bool
	}{
		"fixint":              {[]byte{0x01}, true},
		"nested":              {[]byte{0x92, 0x81, 0xa1, 'k', 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xd4, 0x01, 0x02}, true},
		"ext8":                {[]byte{0xc7, 0x02, 0x05, 0xaa, 0xbb}, true},
		"too deep":            {deep, false},
		"array32 huge":        {[]byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0x00}, false},
		"map32 huge":          {[]byte{0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa0, 0x00}, false},
		"ext32 huge":          {[]byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
		"never used 0xc1":     {[]byte{0xc1}, false},
		"two values":          {[]byte{0x01, 0x02}, false},
		"truncated float":     {[]byte{0xcb, 0, 0}, false},
		"empty":               {nil, false},
		"str8 over input":     {[]byte{0xd9, 0x10, 'a'}, false},
		"map odd item count":  {[]byte{0x81, 0x01}, false},
		"array16 exact input": {[]byte{0xdc, 0x00, 0x02, 0x01, 0x02}, true},
	}
	for name, tc := range cases {
		err := ValidatePayload(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadPayload) {
			t.Errorf("%s: %v does not match ErrBadPayload", name, err)
		}
	}
}
