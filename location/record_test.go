package location

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

func validDescriptor() Descriptor {
	return Descriptor{
		Mesh: "game", RID: "node-1", Generation: 1<<63 + 5, Revision: 3, Endpoint: "tcp://10.0.0.5:7001",
		Servers: map[string]uint16{"match": 100, "lobby": 0, "top": maxServerWeight}, ObjectRole: RoleServer,
		PlacementWeight: 1 << 31, SecurityIdentity: "shared:abcd", Protocol: 65535, Draining: true,
	}
}

func validPublisher() Publisher {
	return Publisher{Channel: "news", RID: "pub-1", Generation: 9, Endpoint: "tcp://10.0.0.5:9001"}
}

func mustEncode(t testing.TB, v any) string {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameDesc(a, b Descriptor) bool {
	return maps.Equal(a.Servers, b.Servers) && (a.Servers == nil) == (b.Servers == nil) &&
		slices.Equal(a.Kinds, b.Kinds) && (a.Kinds == nil) == (b.Kinds == nil) &&
		a.Mesh == b.Mesh && a.RID == b.RID && a.Generation == b.Generation && a.Revision == b.Revision &&
		a.Endpoint == b.Endpoint && a.ObjectRole == b.ObjectRole && a.PlacementWeight == b.PlacementWeight &&
		a.SecurityIdentity == b.SecurityIdentity && a.Protocol == b.Protocol && a.Draining == b.Draining
}

// Property: every valid descriptor survives encode → decode, in any
// msgpack integer width the encoder may choose.
func TestDecodeDescriptor_RoundTrip(t *testing.T) {
	name := rapid.StringMatching(`[a-z0-9.-]{1,40}`)
	rapid.Check(t, func(t *rapid.T) {
		d := Descriptor{
			Mesh: name.Draw(t, "mesh"), RID: name.Draw(t, "rid"),
			Generation: rapid.Uint64Min(1).Draw(t, "gen"), Revision: rapid.Uint64Min(1).Draw(t, "rev"),
			Endpoint:         rapid.StringN(0, 60, maxEndpointLen).Draw(t, "endpoint"),
			ObjectRole:       ObjectRole(rapid.IntRange(1, 3).Draw(t, "role")),
			PlacementWeight:  rapid.Uint32().Draw(t, "pw"),
			SecurityIdentity: rapid.StringN(0, 60, maxEndpointLen).Draw(t, "id"),
			Protocol:         rapid.Uint16().Draw(t, "proto"),
			Draining:         rapid.Bool().Draw(t, "draining"),
		}
		if rapid.Bool().Draw(t, "servers") {
			d.Servers = rapid.MapOfN(name, rapid.Uint16Max(maxServerWeight), 0, 20).Draw(t, "servers")
		}
		if rapid.Bool().Draw(t, "lists kinds") { // else nil: not listed
			d.Kinds = slices.Sorted(maps.Keys(rapid.MapOfN(name, rapid.Bool(), 0, maxKinds).Draw(t, "kinds")))
			if d.Kinds == nil {
				d.Kinds = []string{} // lists none
			}
		}
		blob, err := encodeDescriptor(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeDescriptor(blob)
		if err != nil {
			t.Fatalf("decode %+v: %v", d, err)
		}
		if !sameDesc(got, d) {
			t.Fatalf("round trip\n got  %+v\n want %+v", got, d)
		}
		// Compact integers (another valid encoding of the same record).
		var sb strings.Builder
		enc := msgpack.NewEncoder(&sb)
		enc.UseCompactInts(true)
		rec := descriptorRecord{Mesh: d.Mesh, RID: d.RID, Generation: d.Generation, Revision: d.Revision,
			Endpoint: d.Endpoint, Servers: d.Servers, ObjectRole: uint8(d.ObjectRole), PlacementWeight: d.PlacementWeight,
			SecurityIdentity: d.SecurityIdentity, Protocol: d.Protocol, Draining: d.Draining}
		if d.Kinds != nil {
			rec.Kinds = &d.Kinds
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		if got, err := decodeDescriptor(sb.String()); err != nil || !sameDesc(got, d) {
			t.Fatalf("compact ints: %+v %v", got, err)
		}
	})
}

func TestDecodePublisher_RoundTrip(t *testing.T) {
	p := validPublisher()
	blob, err := encodePublisher(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodePublisher(blob); err != nil || got != p {
		t.Fatalf("round trip %+v %v", got, err)
	}
}

// A field a newer writer added is skipped when it is a scalar or a
// shallow container.
func TestDecodeDescriptor_UnknownFields(t *testing.T) {
	type future struct {
		descriptorRecord `msgpack:",inline"`
		Zone             string         `msgpack:"z"`
		Labels           map[string]any `msgpack:"l"`
		Ports            []int          `msgpack:"n"`
	}
	d := validDescriptor()
	rec := future{Zone: "eu-1", Labels: map[string]any{"a": []any{1, "x", map[string]int{"b": 2}}}, Ports: []int{1, 2}}
	rec.descriptorRecord = descriptorRecord{Mesh: d.Mesh, RID: d.RID, Generation: d.Generation, Revision: d.Revision,
		Endpoint: d.Endpoint, Servers: d.Servers, ObjectRole: uint8(d.ObjectRole), PlacementWeight: d.PlacementWeight,
		SecurityIdentity: d.SecurityIdentity, Protocol: d.Protocol, Draining: d.Draining}
	got, err := decodeDescriptor(mustEncode(t, rec))
	if err != nil || !sameDesc(got, d) {
		t.Fatalf("decode with unknown fields: %+v %v", got, err)
	}
}

// allocBytes returns the bytes f allocates, averaged over runs.
func allocBytes(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// Hostile and corrupted blobs: each is refused with ErrCorrupt, without a
// panic and without allocating more than a few KiB (the declared lengths
// are lies and are never trusted).
func TestDecodeDescriptor_Hostile(t *testing.T) {
	d := validDescriptor()
	good := mustEncode(t, descriptorRecord{Mesh: d.Mesh, RID: d.RID, Generation: d.Generation, Revision: d.Revision,
		Endpoint: d.Endpoint, ObjectRole: uint8(d.ObjectRole)})
	with := func(mut func(*descriptorRecord)) string {
		r := descriptorRecord{Mesh: "m", RID: "r", Generation: 1, Revision: 1, ObjectRole: uint8(RoleServer)}
		mut(&r)
		return mustEncode(t, r)
	}
	manyServers := map[string]uint16{}
	for i := range maxServers + 1 {
		manyServers[strings.Repeat("s", 1+i%200)+string(rune('a'+i%26))+string(rune('a'+i/26%26))] = 1
	}
	var manyKinds []string
	for i := range maxKinds + 1 {
		manyKinds = append(manyKinds, fmt.Sprintf("kind-%03d", i))
	}
	deep := strings.Repeat("\x91", 100) + "\xc0"
	for name, blob := range map[string]string{
		"empty":                "",
		"nil":                  "\xc0",
		"not a map":            "\x93\x01\x02\x03",
		"truncated":            good[:len(good)-3],
		"trailing byte":        good + "\x00",
		"map32 of 4G fields":   "\xdf\xff\xff\xff\xff",
		"map16 lying":          "\xde\xff\xff\xa1m",
		"str32 of 4 GiB":       "\x81\xa1m\xdb\xff\xff\xff\xff",
		"bin32 of 4 GiB":       "\x81\xa1m\xc6\xff\xff\xff\xff",
		"servers map32 lying":  "\x81\xa1s\xdf\xff\xff\xff\xff",
		"unknown array32":      "\x81\xa1z\xdd\xff\xff\xff\xff",
		"unknown nested deep":  "\x81\xa1z" + deep,
		"unknown ext":          "\x81\xa1z\xd4\x01\x02",
		"duplicate field":      "\x82\xa1m\xa1a\xa1m\xa1b",
		"non-string key":       "\x81\x01\x02",
		"negative generation":  "\x81\xa1g\xd3\xff\xff\xff\xff\xff\xff\xff\xff",
		"float generation":     "\x81\xa1g\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00",
		"role out of range":    with(func(r *descriptorRecord) { r.ObjectRole = 9 }),
		"role 0":               with(func(r *descriptorRecord) { r.ObjectRole = 0 }),
		"generation 0":         with(func(r *descriptorRecord) { r.Generation = 0 }),
		"revision 0":           with(func(r *descriptorRecord) { r.Revision = 0 }),
		"empty RID":            with(func(r *descriptorRecord) { r.RID = "" }),
		"empty mesh":           with(func(r *descriptorRecord) { r.Mesh = "" }),
		"brace in mesh":        with(func(r *descriptorRecord) { r.Mesh = "a{b" }),
		"oversized RID":        with(func(r *descriptorRecord) { r.RID = strings.Repeat("r", maxNameLen+1) }),
		"oversized endpoint":   with(func(r *descriptorRecord) { r.Endpoint = strings.Repeat("e", maxEndpointLen+1) }),
		"oversized identity":   with(func(r *descriptorRecord) { r.SecurityIdentity = strings.Repeat("i", maxEndpointLen+1) }),
		"weight above maximum": with(func(r *descriptorRecord) { r.Servers = map[string]uint16{"match": maxServerWeight + 1} }),
		"empty server name":    with(func(r *descriptorRecord) { r.Servers = map[string]uint16{"": 1} }),
		"too many servers":     with(func(r *descriptorRecord) { r.Servers = manyServers }),
		"too many kinds":       with(func(r *descriptorRecord) { r.Kinds = &manyKinds }),
		"kinds array32 lying":  "\x81\xa1k\xdd\xff\xff\xff\xff",
		"kinds not an array":   "\x81\xa1k\xa4room",
		"kind not a string":    "\x81\xa1k\x91\x01",
		"empty kind":           with(func(r *descriptorRecord) { r.Kinds = &[]string{""} }),
		"oversized kind":       with(func(r *descriptorRecord) { r.Kinds = &[]string{strings.Repeat("k", maxNameLen+1)} }),
		"kind with colon":      with(func(r *descriptorRecord) { r.Kinds = &[]string{"a:b"} }),
		"kind twice":           with(func(r *descriptorRecord) { r.Kinds = &[]string{"room", "room"} }),
		"kinds not sorted":     with(func(r *descriptorRecord) { r.Kinds = &[]string{"room", "player"} }),
		"oversized record":     "\x81\xa1e\xdb\x00\x10\x00\x00" + strings.Repeat("x", maxRecordBytes),
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocBytes(10, func() { _, err = decodeDescriptor(blob) })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
			if limit := uint64(64<<10 + 4*len(blob)); n > limit {
				t.Fatalf("allocated %d bytes decoding %d, limit %d", n, len(blob), limit)
			}
		})
	}
}

func TestDecodePublisher_Hostile(t *testing.T) {
	with := func(mut func(*publisherRecord)) string {
		r := publisherRecord{Channel: "c", RID: "r", Generation: 1, Endpoint: "tcp://h:1"}
		mut(&r)
		return mustEncode(t, r)
	}
	for name, blob := range map[string]string{
		"empty":              "",
		"str32 lying":        "\x81\xa1e\xdb\xff\xff\xff\xff",
		"generation 0":       with(func(r *publisherRecord) { r.Generation = 0 }),
		"empty endpoint":     with(func(r *publisherRecord) { r.Endpoint = "" }),
		"empty RID":          with(func(r *publisherRecord) { r.RID = "" }),
		"oversized endpoint": with(func(r *publisherRecord) { r.Endpoint = strings.Repeat("e", maxEndpointLen+1) }),
		"descriptor blob":    mustEncode(t, descriptorRecord{Mesh: "m", RID: "r", Generation: 1, Revision: 1, ObjectRole: 1}),
	} {
		if _, err := decodePublisher(blob); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: error %v, want ErrCorrupt", name, err)
		}
	}
}

func TestParseSpotRecord(t *testing.T) {
	spot := Ownership{Kind: "room", ID: "1", Mesh: "m"}
	for _, tc := range []struct {
		f    []string
		want Ownership
	}{
		{[]string{"n", "18446744073709551615", "999999999999999"}, Ownership{Kind: "room", ID: "1", Mesh: "m", OwnerRID: "n", OwnerGeneration: 1<<64 - 1, Epoch: maxEpoch}},
		{[]string{"", "", "0"}, spot}, // absent
		{[]string{"", "", "7"}, Ownership{Kind: "room", ID: "1", Mesh: "m", Epoch: 7}}, // released
	} {
		got, err := parseSpotRecord(spot, tc.f)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.f, got, err, tc.want)
		}
	}
	for _, f := range [][]string{
		{strings.Repeat("n", maxNameLen+1), "1", "1"},
		{"n", "0", "1"}, {"n", "01", "1"}, {"n", "-1", "1"}, {"n", "+1", "1"}, {"n", "1e3", "1"}, {"n", "", "1"},
		{"n", "18446744073709551616", "1"},
		{"n", "1", "0"}, {"n", "1", ""}, {"n", "1", "1000000000000000"}, {"n", "1", "abc"}, {"n", "1", " 1"},
		{"", "1", "1"}, {"", "", ""}, {"", "", "01"}, {"", "0", "0"}, {"n", "", "0"},
		{"n", "1"}, {"n", "1", "1", "1"},
	} {
		if _, err := parseSpotRecord(spot, f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: error %v, want ErrCorrupt", f, err)
		}
	}
}

// checkDecodeAlloc fails when decoding data allocated more than a small
// multiple of its size.
func checkDecodeAlloc(t *testing.T, data []byte, decode func(string)) {
	s := string(data)
	if n := allocBytes(1, func() { decode(s) }); n > uint64(256<<10+16*len(s)) {
		t.Fatalf("decoding %d bytes allocated %d", len(s), n)
	}
}

func FuzzDecodeDescriptor(f *testing.F) {
	d := validDescriptor()
	good, err := encodeDescriptor(d)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(good))
	for _, n := range []int{0, 1, 5, len(good) / 2, len(good) - 1} {
		f.Add([]byte(good[:n]))
	}
	f.Add([]byte("\xdf\xff\xff\xff\xff"))
	f.Add([]byte("\x81\xa1s\xdf\xff\xff\xff\xff"))
	d.Kinds = []string{"player", "room"}
	if withKinds, err := encodeDescriptor(d); err == nil {
		f.Add([]byte(withKinds))
	}
	f.Add([]byte("\x81\xa1k\xdd\xff\xff\xff\xff"))
	f.Add([]byte("\x81\xa1z" + strings.Repeat("\x91", 10) + "\xc0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Descriptor
		var err error
		checkDecodeAlloc(t, data, func(s string) { got, err = decodeDescriptor(s) })
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Accepted: valid, and the same record msgpack itself reads.
		if verr := got.validate(); verr != nil {
			t.Fatalf("accepted an invalid descriptor: %v", verr)
		}
		var rec descriptorRecord
		if err := msgpack.Unmarshal(data, &rec); err != nil {
			t.Fatalf("accepted what msgpack refuses: %v", err)
		}
		oracle := Descriptor{Mesh: rec.Mesh, RID: rec.RID, Generation: rec.Generation, Revision: rec.Revision,
			Endpoint: rec.Endpoint, Servers: rec.Servers, ObjectRole: ObjectRole(rec.ObjectRole),
			PlacementWeight: rec.PlacementWeight, SecurityIdentity: rec.SecurityIdentity, Protocol: rec.Protocol, Draining: rec.Draining}
		if rec.Kinds != nil {
			oracle.Kinds = *rec.Kinds
		}
		if len(oracle.Servers) == 0 && len(got.Servers) == 0 {
			oracle.Servers, got.Servers = nil, nil
		}
		if !sameDesc(got, oracle) {
			t.Fatalf("decoder and msgpack disagree\n got    %+v\n oracle %+v", got, oracle)
		}
		// And it round-trips.
		blob, err := encodeDescriptor(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeDescriptor(blob)
		if err != nil || !sameDesc(again, got) {
			t.Fatalf("re-encoded record: %+v %v", again, err)
		}
	})
}

func FuzzDecodePublisher(f *testing.F) {
	good, err := encodePublisher(validPublisher())
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(good))
	f.Add([]byte(good[:len(good)-1]))
	f.Add([]byte("\x81\xa1e\xdb\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Publisher
		var err error
		checkDecodeAlloc(t, data, func(s string) { got, err = decodePublisher(s) })
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if verr := got.validate(); verr != nil {
			t.Fatalf("accepted an invalid publisher: %v", verr)
		}
		var rec publisherRecord
		if err := msgpack.Unmarshal(data, &rec); err != nil {
			t.Fatalf("accepted what msgpack refuses: %v", err)
		}
		if oracle := (Publisher{Channel: rec.Channel, RID: rec.RID, Generation: rec.Generation, Endpoint: rec.Endpoint}); got != oracle {
			t.Fatalf("decoder and msgpack disagree: %+v %+v", got, oracle)
		}
	})
}

func FuzzParseSpotRecord(f *testing.F) {
	f.Add("n", "1", "1")
	f.Add("n", "18446744073709551615", "999999999999999")
	f.Add("", "", "0")
	f.Add("", "", "3")
	f.Add("", "01", "1e3")
	f.Fuzz(func(t *testing.T, owner, gen, epoch string) {
		spot := Ownership{Kind: "room", ID: "1", Mesh: "m"}
		o, err := parseSpotRecord(spot, []string{owner, gen, epoch})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if !reflect.DeepEqual(Ownership{Kind: o.Kind, ID: o.ID, Mesh: o.Mesh}, spot) {
			t.Fatalf("spot changed: %+v", o)
		}
		// Accepted: exactly what the scripts would have written, or what
		// they return for an absent record.
		switch {
		case owner == "" && gen == "" && epoch == "0":
			if o != spot {
				t.Fatalf("absent record read as %+v", o)
			}
		case owner == "":
			if gen != "" || o.Owned() || o.OwnerGeneration != 0 || u64(o.Epoch) != epoch || o.Epoch == 0 || o.Epoch > maxEpoch {
				t.Fatalf("accepted %q %q %q as released %+v", owner, gen, epoch, o)
			}
		default:
			if o.OwnerRID != owner || u64(o.OwnerGeneration) != gen || u64(o.Epoch) != epoch || o.validateOwner() != nil {
				t.Fatalf("accepted %q %q %q as %+v", owner, gen, epoch, o)
			}
		}
	})
}

// A descriptor's kinds: absent (an older writer) reads as nil, an empty
// list stays empty, a full list round-trips; an older reader, which knows
// no "k", skips the field (shown by decoding with "k" treated as unknown).
func TestDecodeDescriptor_Kinds(t *testing.T) {
	d := validDescriptor()
	old := mustEncode(t, descriptorRecord{Mesh: d.Mesh, RID: d.RID, Generation: d.Generation, Revision: d.Revision,
		Endpoint: d.Endpoint, Servers: d.Servers, ObjectRole: uint8(d.ObjectRole), PlacementWeight: d.PlacementWeight,
		SecurityIdentity: d.SecurityIdentity, Protocol: d.Protocol, Draining: d.Draining})
	got, err := decodeDescriptor(old)
	if err != nil || got.Kinds != nil || !got.Hosts("anything") {
		t.Fatalf("descriptor without kinds: %+v %v (want Kinds nil, hosting every kind)", got.Kinds, err)
	}
	for _, kinds := range [][]string{{}, {"player"}, {"player", "room"}} {
		d.Kinds = kinds
		blob, err := encodeDescriptor(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeDescriptor(blob)
		if err != nil || !sameDesc(got, d) {
			t.Fatalf("kinds %q: %+v %v", kinds, got.Kinds, err)
		}
		if got.Hosts("guild") || got.Hosts("player") != slices.Contains(kinds, "player") {
			t.Fatalf("kinds %q: Hosts disagrees", kinds)
		}
		// An older reader: the same record with "k" renamed to a key it
		// does not know decodes to the descriptor without kinds.
		renamed := strings.Replace(blob, "\xa1k", "\xa1z", 1)
		if got, err := decodeDescriptor(renamed); err != nil || got.Kinds != nil {
			t.Fatalf("kinds %q as an unknown field: %+v %v", kinds, got.Kinds, err)
		}
	}
	// The limits: 64 kinds of 256 bytes fit in a record.
	d.Kinds = nil
	for i := range maxKinds {
		d.Kinds = append(d.Kinds, fmt.Sprintf("%03d", i)+strings.Repeat("k", maxNameLen-3))
	}
	blob, err := encodeDescriptor(d)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeDescriptor(blob); err != nil || !sameDesc(got, d) {
		t.Fatalf("64 kinds of 256 bytes: %v", err)
	}
	// Not an Object Server: hosts nothing, whatever it lists.
	d.ObjectRole = RoleClient
	if d.Hosts("") || d.Hosts(d.Kinds[0]) {
		t.Fatal("an Object Client hosts a kind")
	}
}

// The same descriptor always encodes to the same bytes (the Servers map is
// written with its names sorted): the Redis store tells a change from a
// renewal by comparing them.
func TestEncodeDescriptor_Deterministic(t *testing.T) {
	d := Descriptor{Mesh: "m", RID: "r", Generation: 1, Revision: 1, Endpoint: "tcp://h:1", ObjectRole: RoleServer,
		Servers: map[string]uint16{}}
	for i := range 50 {
		d.Servers[fmt.Sprintf("channel-%02d", i)] = uint16(i)
	}
	first, err := encodeDescriptor(d)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := encodeDescriptor(d.Clone())
		if err != nil || again != first {
			t.Fatalf("encodings differ (%v)", err)
		}
	}
	back, err := decodeDescriptor(first)
	if err != nil || !maps.Equal(back.Servers, d.Servers) {
		t.Fatalf("decoded %v %v", back.Servers, err)
	}
	if _, err := encodeDescriptor(Descriptor{Mesh: "m", RID: "r", Generation: 1, Revision: 1, ObjectRole: RoleNone}); err != nil {
		t.Fatal(err)
	}
}
