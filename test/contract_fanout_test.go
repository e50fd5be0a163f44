package test

// Contract tests for classic fanout: the classic fanout contract and the fanout lines
// of §13 "검증 요구", driven through the public fanout API, the Location
// Store and zlink.Start only.

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// Automatic fanout subscriber connects only to publishers of its own
// ChannelName.
func TestContract_Fanout_AutomaticSubscriberOnlySameChannel(t *testing.T) {
	for _, kind := range fanoutStoreKinds {
		t.Run(kind, func(t *testing.T) {
			store := newFanoutStore(t, kind)
			mine := startFanoutPub(t, "scores", store)
			other := startFanoutPub(t, "chat", store)
			var box inbox
			sub := startFanoutSub(t, fanout.SubscriberConfig{Channel: "scores", Automatic: true, Store: store}, &box)
			waitFanoutState(t, sub, pubKey(mine), fanout.StateLive)

			// The other channel's publisher publishes first, then ours; ours
			// arriving while the other's never does shows no connection to it.
			for i := range 5 {
				if err := other.Publish("", []byte(fmt.Sprint("chat ", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := mine.Publish("", []byte("score")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "message of the same channel", 5*time.Second, func() bool { return box.from(mine.RID()) == 1 })
			if n := box.from(other.RID()); n != 0 {
				t.Fatalf("%d messages of another channel's publisher arrived", n)
			}
			keys, endpoints := statusKeys(sub)
			if !slices.Equal(keys, []string{pubKey(mine)}) || !slices.Equal(endpoints, []string{mine.Endpoint()}) {
				t.Fatalf("Status keys %v endpoints %v, want only %s at %s", keys, endpoints, pubKey(mine), mine.Endpoint())
			}
		})
	}
}

// Automatic fanout subscribers make no physical connection to each other,
// and only fanout publisher descriptors are read: a MeshNode descriptor under
// the same name is ignored.
func TestContract_Fanout_AutomaticSubscribersNeverConnectToEachOther(t *testing.T) {
	for _, kind := range fanoutStoreKinds {
		t.Run(kind, func(t *testing.T) {
			spy := &spyStore{Store: newFanoutStore(t, kind)}
			meshNode := location.Descriptor{
				Mesh: "lobby", RID: "meshnode-1", Generation: 1, Revision: 1,
				Endpoint: freeEndpoint(t), ObjectRole: location.RoleNone,
				Servers: map[string]uint16{"lobby": 100},
			}
			if err := spy.PutDescriptor(ctxT(t, 5*time.Second), meshNode, time.Minute); err != nil {
				t.Fatal(err)
			}
			pub := startFanoutPub(t, "lobby", spy)
			var box1, box2 inbox
			sub1 := startFanoutSub(t, fanout.SubscriberConfig{Channel: "lobby", Automatic: true, Store: spy}, &box1)
			sub2 := startFanoutSub(t, fanout.SubscriberConfig{Channel: "lobby", Automatic: true, Store: spy}, &box2)
			waitFanoutState(t, sub1, pubKey(pub), fanout.StateLive)
			waitFanoutState(t, sub2, pubKey(pub), fanout.StateLive)
			if err := pub.Publish("", []byte("hello")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "both subscribers receive", 5*time.Second, func() bool {
				return box1.from(pub.RID()) == 1 && box2.from(pub.RID()) == 1
			})
			for i, sub := range []*fanout.Subscriber{sub1, sub2} {
				keys, endpoints := statusKeys(sub)
				if !slices.Equal(keys, []string{pubKey(pub)}) || !slices.Equal(endpoints, []string{pub.Endpoint()}) {
					t.Fatalf("subscriber %d Status keys %v endpoints %v, want only the publisher %s", i+1, keys, endpoints, pubKey(pub))
				}
			}
			if n := spy.meshReads.Load(); n != 0 {
				t.Fatalf("fanout read MeshNode descriptors %d times", n)
			}
			if spy.listPublishers.Load() == 0 {
				t.Fatal("automatic subscribers never listed fanout publishers")
			}
			// A subscriber has nothing another subscriber could dial.
			if _, ok := any(sub1).(interface{ Endpoint() string }); ok {
				t.Fatal("Subscriber exposes an endpoint")
			}
		})
	}
}

// Automatic publisher publishes only a fanout publisher descriptor and
// starts no outbound connect; a subscriber that starts later still receives.
func TestContract_Fanout_AutomaticPublisherOnlyDescriptorNoDial(t *testing.T) {
	for _, kind := range fanoutStoreKinds {
		t.Run(kind, func(t *testing.T) {
			store := newFanoutStore(t, kind)
			ctx := ctxT(t, 5*time.Second)
			pub := startFanoutPub(t, "events", store)

			pubs, err := store.ListPublishers(ctx, "events")
			if err != nil {
				t.Fatal(err)
			}
			want := location.Publisher{Channel: "events", RID: pub.RID(), Generation: pub.Generation(), Endpoint: pub.Endpoint()}
			if len(pubs) != 1 || pubs[0] != want {
				t.Fatalf("publisher records %+v, want exactly %+v", pubs, want)
			}
			if ds, err := store.ListDescriptors(ctx, "events"); err != nil || len(ds) != 0 {
				t.Fatalf("MeshNode descriptors %v (%v), want none", ds, err)
			}
			// No dial in the code path: the publisher has no method to connect.
			for name, ok := range map[string]bool{
				"Dial":    implements[interface{ Dial(string) error }](pub),
				"Connect": implements[interface{ Connect(string) error }](pub),
			} {
				if ok {
					t.Fatalf("Publisher has a %s method", name)
				}
			}

			var box inbox
			sub := startFanoutSub(t, fanout.SubscriberConfig{Channel: "events", Automatic: true, Store: store}, &box)
			waitFanoutState(t, sub, pubKey(pub), fanout.StateLive)
			if err := pub.Publish("", []byte("late joiner")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "late subscriber receives", 5*time.Second, func() bool { return box.from(pub.RID()) == 1 })

			if err := pub.Close(); err != nil {
				t.Fatal(err)
			}
			if pubs, err := store.ListPublishers(ctx, "events"); err != nil || len(pubs) != 0 {
				t.Fatalf("records after Close %v (%v), want none", pubs, err)
			}
		})
	}
}

func implements[I any](v any) bool { _, ok := v.(I); return ok }

// Automatic + manual on one registration fails startup, through the fanout
// package and through zlink.Start; the manual source never reads the store.
func TestContract_Fanout_AutomaticAndManualFailsStartup(t *testing.T) {
	store := location.NewMemory()
	t.Cleanup(func() { _ = store.Close() })
	spy := &spyStore{Store: store}
	pub := startFanoutPub(t, "alerts", spy)

	t.Run("fanout.StartSubscriber", func(t *testing.T) {
		before := spy.listPublishers.Load()
		s, err := fanout.StartSubscriber(ctxT(t, 5*time.Second), fanout.SubscriberConfig{
			Channel: "alerts", Automatic: true, Store: spy, Endpoints: []string{pub.Endpoint()},
		})
		if err == nil {
			_ = s.Close()
		}
		if !errors.Is(err, fanout.ErrSourceConflict) {
			t.Fatalf("StartSubscriber: %v, want ErrSourceConflict", err)
		}
		if n := spy.listPublishers.Load() - before; n != 0 {
			t.Fatalf("refused subscriber read the store %d times", n)
		}
	})
	t.Run("zlink.Start", func(t *testing.T) {
		o := zlink.NewOptions().SetLocationStore(store).SetLogger(testLogger(t))
		o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "alerts", Automatic: true, Endpoints: []string{pub.Endpoint()}})
		h, err := zlink.Start(ctxT(t, 5*time.Second), o)
		if err == nil {
			stopHost(t, h)
		}
		if !errors.Is(err, zlink.ErrConfig) || !errors.Is(err, routemesh.ErrFanoutSourceConflict) {
			t.Fatalf("Start: %v, want ErrFanoutSourceConflict (ErrConfig)", err)
		}
	})
	t.Run("manual reads nothing from the store", func(t *testing.T) {
		before := spy.listPublishers.Load()
		var box inbox
		sub := startFanoutSub(t, fanout.SubscriberConfig{Channel: "alerts", Store: spy, Endpoints: []string{pub.Endpoint()}}, &box)
		waitFanoutState(t, sub, pub.Endpoint(), fanout.StateLive)
		if err := pub.Publish("", []byte("x")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "manual subscriber receives", 5*time.Second, func() bool { return box.from(pub.Endpoint()) == 1 })
		if n := spy.listPublishers.Load() - before; n != 0 {
			t.Fatalf("manual subscriber listed publishers %d times", n)
		}
		if n := spy.meshReads.Load(); n != 0 {
			t.Fatalf("manual subscriber read MeshNode descriptors %d times", n)
		}
	})
}

// One dedicated SUB socket per publisher endpoint, and one publisher's
// timeout is never applied to another.
func TestContract_Fanout_PerPublisherSocketAndTimeout(t *testing.T) {
	for _, mode := range append(slices.Clone(fanoutStoreKinds), "manual") {
		t.Run(mode, func(t *testing.T) {
			var store location.Store
			cfg := fanout.SubscriberConfig{Channel: "ticks"}
			if mode != "manual" {
				store = newFanoutStore(t, mode)
				cfg.Automatic, cfg.Store = true, store
			}
			a := startFanoutPub(t, "ticks", store)
			b := startFanoutPub(t, "ticks", store)
			keyA, keyB, idA, idB := pubKey(a), pubKey(b), a.RID(), b.RID()
			if mode == "manual" {
				cfg.Endpoints = []string{a.Endpoint(), b.Endpoint()}
				keyA, keyB, idA, idB = a.Endpoint(), b.Endpoint(), a.Endpoint(), b.Endpoint()
			}
			var box inbox
			sub := startFanoutSub(t, cfg, &box)
			waitFanoutState(t, sub, keyA, fanout.StateLive)
			waitFanoutState(t, sub, keyB, fanout.StateLive)
			keys, endpoints := statusKeys(sub)
			wantKeys := []string{keyA, keyB}
			slices.Sort(wantKeys)
			wantEPs := map[string]string{keyA: a.Endpoint(), keyB: b.Endpoint()}
			if !slices.Equal(keys, wantKeys) || endpoints[0] != wantEPs[keys[0]] || endpoints[1] != wantEPs[keys[1]] || endpoints[0] == endpoints[1] {
				t.Fatalf("Status keys %v endpoints %v, want one entry per publisher %v", keys, endpoints, wantEPs)
			}

			// Stop A while B keeps publishing.
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			sent := 0
			waitFor(t, "A TimedOut", 5*time.Second, func() bool {
				if err := b.Publish("", []byte("b")); err != nil {
					t.Fatal(err)
				}
				sent++
				st, ok := fanoutEntry(sub, keyA)
				return ok && st.State == fanout.StateTimedOut
			})
			stB, ok := fanoutEntry(sub, keyB)
			if !ok || stB.State != fanout.StateLive {
				t.Fatalf("B is %+v (present %v) when A timed out, want Live", stB, ok)
			}
			// B's messages keep arriving after A's timeout.
			got := box.from(idB)
			if err := b.Publish("", []byte("after")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "B delivers after A timed out", 5*time.Second, func() bool { return box.from(idB) > got })
			if stB, _ = fanoutEntry(sub, keyB); stB.State != fanout.StateLive {
				t.Fatalf("B is %v after A timed out, want Live", stB.State)
			}
			if n := box.from(idA); n != 0 {
				t.Fatalf("%d messages attributed to A, which never published", n)
			}
			if sent == 0 {
				t.Fatal("B never published")
			}
		})
	}
}
