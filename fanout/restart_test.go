package fanout

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// fixedEndpoint returns a free loopback endpoint below the ephemeral range,
// for a publisher that must come back on the same port.
func fixedEndpoint(t *testing.T) string {
	t.Helper()
	for i := 0; i < 200; i++ {
		port := 20000 + rand.IntN(12000)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			_ = l.Close()
			return "tcp://127.0.0.1:" + strconv.Itoa(port)
		}
	}
	t.Fatal("no free port")
	return ""
}

// A publisher restarted on the same endpoint is a new lifecycle: the old
// entry must not latch onto it (that delivered every message twice).
func TestSubscriber_RestartedPublisherOnSamePortDeliversOnce(t *testing.T) {
	ctx := context.Background()
	store := location.NewMemory()
	defer store.Close()
	pcfg := PublisherConfig{Channel: "c", Listen: fixedEndpoint(t), Store: store, TTL: 300 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond}
	p1, err := StartPublisher(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	s, err := StartSubscriber(ctx, SubscriberConfig{Channel: "c", Automatic: true, Store: store,
		ReceiveTimeout: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		Handler: func(Message) { got.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key1 := p1.RID() + "/" + strconv.FormatUint(p1.Generation(), 10)
	waitUntil(t, "the first publisher live", func() bool { return onlyLive(s.Status(), key1) })
	_ = p1.Close()
	p2, err := StartPublisher(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	key2 := p2.RID() + "/" + strconv.FormatUint(p2.Generation(), 10)
	waitUntil(t, "only the second publisher's entry left", func() bool { return onlyLive(s.Status(), key2) })
	got.Store(0)
	for i := 0; i < 10; i++ {
		if err := p2.Publish("t", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "ten deliveries", func() bool { return got.Load() >= 10 })
	// A second socket would deliver each message again; give it the time a
	// delivery takes on loopback many times over.
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if n := got.Load(); n != 10 {
			t.Fatalf("published 10, delivered %d", n)
		}
	}
}

func onlyLive(st []PublisherStatus, key string) bool {
	return len(st) == 1 && st[0].Key == key && st[0].State == StateLive
}
