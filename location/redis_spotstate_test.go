package location_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/zlink-go/zlink/location"
)

// stateKey is the Redis key of a Spot's state in a corruptEnv (prefix c).
func stateKey(id string) string { return "c:{spot:m:room:" + id + "}:state" }

// A stored state larger than MaxSpotState is refused inside Redis: the
// read is ErrCorrupt and allocates nothing near the value's size, and
// reading only the epoch (what a claim does) never touches the data.
func TestRedis_OversizedSpotStateIsNotRead(t *testing.T) {
	e := newCorruptEnv(t)
	const size = 4 * location.MaxSpotState // 64 MiB
	key := stateKey("big")
	e.do(e.raw.B().Hset().Key(key).FieldValue().FieldValue("v", "1").FieldValue("epoch", "7").
		FieldValue("d", strings.Repeat("x", size)).Build())

	alloc := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var err error
	n := alloc(func() { _, err = e.store.GetSpotState(e.ctx, "m", "room", "big") })
	if !errors.Is(err, location.ErrCorrupt) || !strings.Contains(err.Error(), "not read") {
		t.Fatalf("reading a %d-byte state: %v, want ErrCorrupt", size, err)
	}
	if n > size/8 {
		t.Fatalf("reading a %d-byte state allocated %d bytes: it was read before its size was checked", size, n)
	}
	var epoch uint64
	n = alloc(func() { epoch, err = e.store.SpotStateEpoch(e.ctx, "m", "room", "big") })
	if err != nil || epoch != 7 {
		t.Fatalf("epoch of a big state: %d %v", epoch, err)
	}
	if n > size/8 {
		t.Fatalf("reading the epoch allocated %d bytes", n)
	}

	// A claim that takes the state with it does not read it either: the
	// claim stands, the state is ErrCorrupt.
	var claimed location.ClaimedSpot
	n = alloc(func() {
		claimed, err = e.store.ClaimSpotWithState(e.ctx, spotAt("big", "", 0, 0), spotAt("big", "a", 1, 8))
	})
	if err != nil || claimed.Found || !errors.Is(claimed.StateErr, location.ErrCorrupt) {
		t.Fatalf("claim with a %d-byte state: %+v %v, want the claim with ErrCorrupt for the state", size, claimed, err)
	}
	if n > size/8 {
		t.Fatalf("claiming with a big state allocated %d bytes", n)
	}

	// At the limit it is read whole.
	at := stateKey("at-limit")
	e.do(e.raw.B().Hset().Key(at).FieldValue().FieldValue("v", "2").FieldValue("epoch", "3").
		FieldValue("d", strings.Repeat("y", location.MaxSpotState)).Build())
	st, err := e.store.GetSpotState(e.ctx, "m", "room", "at-limit")
	if err != nil || len(st.Data) != location.MaxSpotState || st.Version != 2 || st.Epoch != 3 {
		t.Fatalf("a state of exactly MaxSpotState: %d bytes v%d e%d %v", len(st.Data), st.Version, st.Epoch, err)
	}
	claimed, err = e.store.ClaimSpotWithState(e.ctx, spotAt("at-limit", "", 0, 0), spotAt("at-limit", "a", 1, 4))
	if err != nil || !claimed.Found || claimed.StateErr != nil || len(claimed.State.Data) != location.MaxSpotState {
		t.Fatalf("claim with a state of exactly MaxSpotState: %d bytes found=%v %v %v", len(claimed.State.Data), claimed.Found, claimed.StateErr, err)
	}
}

// A corrupted state is ErrCorrupt, counted and warned about once per key,
// for a full read and an epoch read alike; a state without data is none.
func TestRedis_CorruptSpotState(t *testing.T) {
	e := newCorruptEnv(t)
	for _, tc := range []struct {
		name      string
		fields    []string // v, epoch, d
		write     func(key string)
		notFound  bool // no state at all
		epochOnly bool // the epoch read succeeds (it does not look at the rest)
	}{
		{name: "version not a number", fields: []string{"x", "3", "d"}, epochOnly: true},
		{name: "version beyond uint32", fields: []string{"4294967296", "3", "d"}, epochOnly: true},
		{name: "epoch 0", fields: []string{"1", "0", "d"}},
		{name: "epoch not a number", fields: []string{"1", "abc", "d"}},
		{name: "long epoch", fields: []string{"1", strings.Repeat("9", 40), "d"}},
		{name: "not a hash", write: func(key string) { e.do(e.raw.B().Set().Key(key).Value("x").Build()) }},
		{name: "no data", write: func(key string) {
			e.do(e.raw.B().Hset().Key(key).FieldValue().FieldValue("v", "1").FieldValue("epoch", "3").Build())
		}, notFound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.ReplaceAll(tc.name, " ", "-")
			key := stateKey(id)
			if tc.write != nil {
				tc.write(key)
			} else {
				e.hash("", key, "", "v", tc.fields[0], "epoch", tc.fields[1], "d", tc.fields[2])
			}
			_, err := e.store.GetSpotState(e.ctx, "m", "room", id)
			_, eerr := e.store.SpotStateEpoch(e.ctx, "m", "room", id)
			// What a claim reads: the record with the state's epoch, the
			// same verdict on the state as the epoch read.
			_, ve, verr := e.store.SpotRecordAndStateEpoch(e.ctx, "m", "room", id)
			// A claim that takes the state: the claim stands, the state
			// is none or ErrCorrupt as a full read says.
			claimed, cerr := e.store.ClaimSpotWithState(e.ctx, spotAt(id, "", 0, 0), spotAt(id, "a", 1, 9))
			if cerr != nil || claimed.Found || (tc.notFound != (claimed.StateErr == nil)) ||
				(!tc.notFound && !errors.Is(claimed.StateErr, location.ErrCorrupt)) {
				t.Fatalf("claim with the state: %+v %v", claimed, cerr)
			}
			switch {
			case tc.notFound:
				if !errors.Is(err, location.ErrNotFound) || !errors.Is(eerr, location.ErrNotFound) || verr != nil || ve != 0 {
					t.Fatalf("read %v, epoch %v, with the record %d %v: want ErrNotFound (epoch 0 with the record)", err, eerr, ve, verr)
				}
				return
			case tc.epochOnly != (verr == nil) || (!tc.epochOnly && !errors.Is(verr, location.ErrCorrupt)):
				t.Fatalf("epoch with the record: %d %v", ve, verr)
			case !errors.Is(err, location.ErrCorrupt):
				t.Fatalf("read: %v, want ErrCorrupt", err)
			case tc.epochOnly && eerr != nil:
				t.Fatalf("epoch: %v", eerr)
			case !tc.epochOnly && !errors.Is(eerr, location.ErrCorrupt):
				t.Fatalf("epoch: %v, want ErrCorrupt", eerr)
			}
			if n := strings.Count(e.log.String(), `"key":"`+key); n != 1 {
				t.Fatalf("%d warnings for %s, want 1", n, key)
			}
		})
	}
}

// spotAt is the ownership record of m/room/id (no owner: gen 0).
func spotAt(id, owner string, gen, epoch uint64) location.Ownership {
	return location.Ownership{Mesh: "m", Kind: "room", ID: id, OwnerRID: owner, OwnerGeneration: gen, Epoch: epoch}
}
