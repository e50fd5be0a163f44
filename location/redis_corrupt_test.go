package location_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// lockedBuffer is a log sink safe for the store's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// corruptEnv is a store with key prefix "c" and a raw client that writes
// straight into its keys, as a hostile or broken writer would.
type corruptEnv struct {
	t     *testing.T
	ctx   context.Context
	store *location.Redis
	raw   rueidis.Client
	log   *lockedBuffer
}

func newCorruptEnv(t *testing.T) *corruptEnv {
	srv := locationtest.StartRedis(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	log := &lockedBuffer{}
	s, err := location.NewRedis(ctx, location.RedisConfig{Addr: srv.Addr(), Prefix: "c",
		Logger: zerolog.New(log).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	return &corruptEnv{t: t, ctx: ctx, store: s, raw: raw, log: log}
}

func (e *corruptEnv) do(cmd rueidis.Completed) {
	e.t.Helper()
	if err := e.raw.Do(e.ctx, cmd).Error(); err != nil {
		e.t.Fatal(err)
	}
}

// hash writes a hash record under key and adds member to index.
func (e *corruptEnv) hash(index, key, member string, fields ...string) {
	e.t.Helper()
	e.do(e.raw.B().Del().Key(key).Build())
	cmd := e.raw.B().Hset().Key(key).FieldValue()
	for i := 0; i+1 < len(fields); i += 2 {
		cmd = cmd.FieldValue(fields[i], fields[i+1])
	}
	e.do(cmd.Build())
	e.index(index, member)
}

// index adds member to index: the descriptor index (live) is a sorted set
// of lease ends, the publisher index a set.
func (e *corruptEnv) index(index, member string) {
	e.t.Helper()
	switch {
	case index == "":
	case strings.HasSuffix(index, ":live"):
		e.do(e.raw.B().Zadd().Key(index).ScoreMember().ScoreMember(float64(time.Now().Add(time.Hour).UnixMilli()), member).Build())
	default:
		e.do(e.raw.B().Sadd().Key(index).Member(member).Build())
	}
}

func blob(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := msgpack.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// descFields is the stored form of a valid descriptor (mesh m, RID rid,
// generation 1, revision 1) with fields changed by over.
func descFields(rid string, over map[string]any) map[string]any {
	f := map[string]any{"m": "m", "r": rid, "g": uint64(1), "v": uint64(1), "e": "tcp://h:1", "o": uint8(3)}
	for k, v := range over {
		if v == nil {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
	return f
}

// Corrupted descriptors written into Redis are skipped by ListDescriptors
// (which still lists the good one), refused by GetDescriptor with
// ErrCorrupt, counted, and logged once per key.
func TestRedis_CorruptDescriptors(t *testing.T) {
	e := newCorruptEnv(t)
	good := locationtest.Desc("m", "good", 1, 1)
	if err := e.store.PutDescriptor(e.ctx, good, time.Minute); err != nil {
		t.Fatal(err)
	}
	const index, prefix = "c:{mesh:m}:live", "c:{mesh:m}:node:"
	long := strings.Repeat("x", 600<<10)
	for _, tc := range []struct {
		name, rid string
		fields    []string // hash fields; nil: see write
		write     func(key string)
		notFound  bool // GetDescriptor says ErrNotFound rather than ErrCorrupt
	}{
		{name: "not msgpack", rid: "a", fields: []string{"gen", "1", "rev", "1", "d", "garbage"}},
		{name: "generation 0", rid: "b", fields: []string{"gen", "0", "rev", "1", "d", blob(t, descFields("b", map[string]any{"g": uint64(0)}))}},
		{name: "empty RID in record", rid: "c", fields: []string{"gen", "1", "rev", "1", "d", blob(t, descFields("", nil))}},
		{name: "other RID in record", rid: "d", fields: []string{"gen", "1", "rev", "1", "d", blob(t, descFields("good", nil))}},
		{name: "other mesh in record", rid: "e", fields: []string{"gen", "1", "rev", "1", "d", blob(t, descFields("e", map[string]any{"m": "other"}))}},
		{name: "gen field disagrees", rid: "f", fields: []string{"gen", "2", "rev", "1", "d", blob(t, descFields("f", nil))}},
		{name: "rev field disagrees", rid: "g", fields: []string{"gen", "1", "rev", "7", "d", blob(t, descFields("g", nil))}},
		{name: "no role", rid: "h", fields: []string{"gen", "1", "rev", "1", "d", blob(t, descFields("h", map[string]any{"o": nil}))}},
		{name: "weight above 10000", rid: "i", fields: []string{"gen", "1", "rev", "1", "d", blob(t, descFields("i", map[string]any{"s": map[string]uint16{"match": 65535}}))}},
		{name: "oversized endpoint", rid: "j", fields: []string{"gen", "1", "rev", "1", "d", blob(t, descFields("j", map[string]any{"e": long}))}},
		{name: "oversized blob", rid: "k", fields: []string{"gen", "1", "rev", "1", "d", long}},
		{name: "no blob", rid: "l", fields: []string{"gen", "1", "rev", "1"}},
		{name: "not a hash", rid: "n", write: func(key string) {
			e.do(e.raw.B().Set().Key(key).Value("hello").Build())
			e.index(index, "n")
		}},
		{name: "oversized RID member", rid: strings.Repeat("r", 1000), notFound: true, fields: []string{"gen", "1", "rev", "1",
			"d", blob(t, descFields(strings.Repeat("r", 1000), nil))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.store.Stats().CorruptRecords
			key := prefix + tc.rid
			if tc.write != nil {
				tc.write(key)
			} else {
				e.hash(index, key, tc.rid, tc.fields...)
			}
			defer e.do(e.raw.B().Zrem().Key(index).Member(tc.rid).Build())
			for range 2 { // the second listing logs no second warning
				list, err := e.store.ListDescriptors(e.ctx, "m")
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				if len(list) != 1 || list[0].RID != "good" {
					t.Fatalf("list %+v, want only the good descriptor", list)
				}
			}
			if got := e.store.Stats().CorruptRecords - before; got != 2 {
				t.Fatalf("corrupt counter +%d, want +2", got)
			}
			// A reader of the changes skips it the same way.
			ch, err := e.store.DescriptorChanges(e.ctx, "m", location.MeshRevision{})
			if err != nil || !ch.Full || len(ch.Put) != 1 || ch.Put[0].RID != "good" {
				t.Fatalf("changes %+v %v, want only the good descriptor", ch, err)
			}
			_, err = e.store.GetDescriptor(e.ctx, "m", tc.rid)
			want := location.ErrCorrupt
			if tc.notFound {
				want = location.ErrNotFound
			}
			if !errors.Is(err, want) {
				t.Fatalf("get: error %v, want %v", err, want)
			}
			if n := strings.Count(e.log.String(), `"key":"`+key[:min(len(key), 40)]); n != 1 {
				t.Fatalf("%d warnings for %s, want 1:\n%s", n, key, e.log.String())
			}
		})
	}
	// The good descriptor was never disturbed.
	if got, err := e.store.GetDescriptor(e.ctx, "m", "good"); err != nil || got.Endpoint != good.Endpoint {
		t.Fatalf("good descriptor: %+v %v", got, err)
	}
}

func TestRedis_CorruptPublishers(t *testing.T) {
	e := newCorruptEnv(t)
	good := location.Publisher{Channel: "news", RID: "good", Generation: 1, Endpoint: "tcp://h:1"}
	if err := e.store.PutPublisher(e.ctx, good, time.Minute); err != nil {
		t.Fatal(err)
	}
	const index, prefix = "c:{fanout:news}:pubs", "c:{fanout:news}:pub:"
	pub := func(rid string, over map[string]any) string {
		f := map[string]any{"c": "news", "r": rid, "g": uint64(1), "e": "tcp://h:2"}
		for k, v := range over {
			f[k] = v
		}
		return blob(t, f)
	}
	for name, tc := range map[string]struct {
		rid    string
		fields []string
	}{
		"not msgpack":          {"a", []string{"gen", "1", "rev", "", "d", "\xdf\xff\xff\xff\xff"}},
		"empty endpoint":       {"b", []string{"gen", "1", "rev", "", "d", pub("b", map[string]any{"e": ""})}},
		"other channel":        {"c", []string{"gen", "1", "rev", "", "d", pub("c", map[string]any{"c": "sports"})}},
		"other RID":            {"d", []string{"gen", "1", "rev", "", "d", pub("good", nil)}},
		"gen field disagrees":  {"e", []string{"gen", "9", "rev", "", "d", pub("e", nil)}},
		"a descriptor instead": {"f", []string{"gen", "1", "rev", "1", "d", blob(t, descFields("f", nil))}},
	} {
		t.Run(name, func(t *testing.T) {
			e.hash(index, prefix+tc.rid, tc.rid, tc.fields...)
			defer e.do(e.raw.B().Srem().Key(index).Member(tc.rid).Build())
			pubs, err := e.store.ListPublishers(e.ctx, "news")
			if err != nil || !slices.Equal(pubs, []location.Publisher{good}) {
				t.Fatalf("list %+v %v, want only the good publisher", pubs, err)
			}
		})
	}
	if n := e.store.Stats().CorruptRecords; n != 6 {
		t.Fatalf("corrupt counter %d, want 6", n)
	}
}

// A corrupted Spot record never yields an owner: SpotRecord and ClaimSpot
// refuse it with ErrCorrupt, ReleaseSpot and TransferSpot with an error
// matching both ErrFenced and ErrCorrupt, and nothing changes the record.
func TestRedis_CorruptSpotRecord(t *testing.T) {
	e := newCorruptEnv(t)
	spot := location.Ownership{Kind: "room", Mesh: "m"}
	for _, tc := range []struct {
		name   string
		fields []string // owner, gen, epoch
		write  func(key string)
		valid  *location.Ownership // read back as this (fields of spot added)
	}{
		{name: "epoch not a number", fields: []string{"a", "1", "abc"}},
		{name: "epoch 0", fields: []string{"a", "1", "0"}},
		{name: "epoch in exponent form", fields: []string{"a", "1", "1e3"}},
		{name: "epoch beyond exact doubles", fields: []string{"a", "1", "9007199254740993"}},
		{name: "epoch missing", fields: []string{"a", "1", ""}},
		{name: "generation with leading zero", fields: []string{"a", "01", "4"}},
		{name: "generation 0", fields: []string{"a", "0", "4"}},
		{name: "generation beyond uint64", fields: []string{"a", "18446744073709551616", "4"}},
		{name: "generation without owner", fields: []string{"", "1", "4"}},
		{name: "long owner", fields: []string{strings.Repeat("a", 300), "1", "4"}},
		{name: "absent epoch 0 stored", fields: []string{"", "", "0"}},
		{name: "no epoch field", write: func(key string) {
			e.do(e.raw.B().Hset().Key(key).FieldValue().FieldValue("owner", "a").FieldValue("gen", "1").Build())
		}},
		{name: "no gen field", write: func(key string) {
			e.do(e.raw.B().Hset().Key(key).FieldValue().FieldValue("owner", "a").FieldValue("epoch", "3").Build())
		}},
		{name: "not a hash", write: func(key string) { e.do(e.raw.B().Set().Key(key).Value("x").Build()) }},
		{name: "released", fields: []string{"", "", "4"}, valid: &location.Ownership{Epoch: 4}},
		{name: "only an epoch field", write: func(key string) {
			e.do(e.raw.B().Hset().Key(key).FieldValue().FieldValue("epoch", "6").Build())
		}, valid: &location.Ownership{Epoch: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := spot
			sp.ID = strings.ReplaceAll(tc.name, " ", "-")
			key := "c:{spot:m:room:" + sp.ID + "}"
			if tc.write != nil {
				tc.write(key)
			} else {
				e.hash("", key, "", "owner", tc.fields[0], "gen", tc.fields[1], "epoch", tc.fields[2])
			}
			before, err := e.raw.Do(e.ctx, e.raw.B().Dump().Key(key).Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			corrupt := e.store.Stats().CorruptRecords
			got, err := e.store.SpotRecord(e.ctx, "m", "room", sp.ID)
			if tc.valid != nil {
				want := *tc.valid
				want.Mesh, want.Kind, want.ID = sp.Mesh, sp.Kind, sp.ID
				if err != nil || got != want {
					t.Fatalf("record %+v %v, want %+v", got, err, want)
				}
				return
			}
			if !errors.Is(err, location.ErrCorrupt) {
				t.Fatalf("record: %+v %v, want ErrCorrupt", got, err)
			}
			next := sp
			next.OwnerRID, next.OwnerGeneration, next.Epoch = "b", 2, 99
			if got, err := e.store.ClaimSpot(e.ctx, sp, next); !errors.Is(err, location.ErrCorrupt) {
				t.Fatalf("claim: %+v %v, want ErrCorrupt", got, err)
			}
			held := sp
			held.OwnerRID, held.OwnerGeneration, held.Epoch = "a", 1, 4
			if err := e.store.ReleaseSpot(e.ctx, held); !errors.Is(err, location.ErrCorrupt) || !errors.Is(err, location.ErrFenced) {
				t.Fatalf("release: %v, want ErrFenced and ErrCorrupt", err)
			}
			if got, err := e.store.TransferSpot(e.ctx, held, "b", 2); !errors.Is(err, location.ErrCorrupt) || !errors.Is(err, location.ErrFenced) {
				t.Fatalf("transfer: %+v %v, want ErrFenced and ErrCorrupt", got, err)
			}
			if n := e.store.Stats().CorruptRecords - corrupt; n != 4 {
				t.Fatalf("corrupt counter +%d, want +4", n)
			}
			if n := strings.Count(e.log.String(), `"key":"`+key); n != 1 {
				t.Fatalf("%d warnings for %s, want 1:\n%s", n, key, e.log.String())
			}
			after, err := e.raw.Do(e.ctx, e.raw.B().Dump().Key(key).Build()).ToString()
			if err != nil || after != before {
				t.Fatalf("the corrupt record changed (%v)", err)
			}
		})
	}
}
