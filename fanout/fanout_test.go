package fanout

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/location"
)

// collector records delivered messages.
type collector struct {
	mu   sync.Mutex
	msgs []Message
}

func (c *collector) handle(m Message) {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
}

func (c *collector) snapshot() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func startPub(t *testing.T, cfg PublisherConfig) *Publisher {
	t.Helper()
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 10 * time.Millisecond
	}
	cfg.Logger = zerolog.Nop()
	p, err := StartPublisher(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartPublisher: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func startSub(t *testing.T, cfg SubscriberConfig) *Subscriber {
	t.Helper()
	if cfg.ReceiveTimeout == 0 {
		cfg.ReceiveTimeout = time.Second
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 10 * time.Millisecond
	}
	s, err := StartSubscriber(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartSubscriber: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func stateOf(s *Subscriber, key string) (PublisherStatus, bool) {
	for _, st := range s.Status() {
		if st.Key == key {
			return st, true
		}
	}
	return PublisherStatus{}, false
}

func TestSubscriberConfig_Validate(t *testing.T) {
	store := location.NewMemory()
	t.Cleanup(func() { _ = store.Close() })
	cases := map[string]struct {
		cfg  SubscriberConfig
		want error
	}{
		"automatic and manual":                     {SubscriberConfig{Channel: "c", Automatic: true, Store: store, Endpoints: []string{"tcp://127.0.0.1:1"}}, ErrSourceConflict},
		"no source":                                {SubscriberConfig{Channel: "c"}, ErrNoSource},
		"automatic no store":                       {SubscriberConfig{Channel: "c", Automatic: true}, ErrNeedsLocationStore},
		"automatic no store, still invalid config": {SubscriberConfig{Channel: "c", Automatic: true}, ErrInvalidConfig},
		"empty channel":                            {SubscriberConfig{Endpoints: []string{"tcp://127.0.0.1:1"}}, ErrInvalidConfig},
		"bad endpoint":                             {SubscriberConfig{Channel: "c", Endpoints: []string{"udp://x:1"}}, ErrInvalidConfig},
		"duplicate endpoint":                       {SubscriberConfig{Channel: "c", Endpoints: []string{"tcp://127.0.0.1:1", "tcp://127.0.0.1:1"}}, ErrInvalidConfig},
		"reserved topic":                           {SubscriberConfig{Channel: "c", Endpoints: []string{"tcp://127.0.0.1:1"}, Topics: []string{"\xffx"}}, ErrReservedTopic},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := StartSubscriber(context.Background(), tc.cfg)
			if err == nil {
				_ = s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("StartSubscriber: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestCheckSubscriberSource is the rule table of the one source check that
// StartSubscriber and zlink.Start's validation share.
func TestCheckSubscriberSource(t *testing.T) {
	eps := []string{"tcp://127.0.0.1:1"}
	for _, tc := range []struct {
		automatic bool
		endpoints []string
		hasStore  bool
		want      error // nil: accepted
	}{
		{true, eps, true, ErrSourceConflict},
		{true, eps, false, ErrSourceConflict},
		{false, nil, true, ErrNoSource},
		{false, nil, false, ErrNoSource},
		{true, nil, false, ErrNeedsLocationStore},
		{true, nil, true, nil},
		{false, eps, false, nil},
		{false, eps, true, nil},
	} {
		err := CheckSubscriberSource(tc.automatic, tc.endpoints, tc.hasStore)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("automatic=%v endpoints=%d store=%v: %v, want %v", tc.automatic, len(tc.endpoints), tc.hasStore, err, tc.want)
		}
	}
}

func TestPublisherConfig_Validate(t *testing.T) {
	for name, cfg := range map[string]PublisherConfig{
		"empty channel": {},
		"bad listen":    {Channel: "c", Listen: "ipc:///tmp/x"},
		"tiny ttl":      {Channel: "c", TTL: time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := StartPublisher(context.Background(), cfg)
			if err == nil {
				_ = p.Close()
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("StartPublisher: %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestManual_DeliversSubscribedTopicsOnly(t *testing.T) {
	pub := startPub(t, PublisherConfig{Channel: "news"})
	var got collector
	sub := startSub(t, SubscriberConfig{Channel: "news", Endpoints: []string{pub.Endpoint()}, Topics: []string{"a."}, Handler: got.handle})
	waitUntil(t, "publisher Live", func() bool {
		st, ok := stateOf(sub, pub.Endpoint())
		return ok && st.State == StateLive
	})
	// Live means the heartbeat (which sorts after every user topic)
	// arrived, so the "a." subscription is in place.
	for _, topic := range []string{"b.skip", "a.one", "a.two"} {
		if err := pub.Publish(topic, []byte(topic)); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	waitUntil(t, "two messages", func() bool { return len(got.snapshot()) >= 2 })
	msgs := got.snapshot()
	if len(msgs) != 2 || msgs[0].Topic != "a.one" || msgs[1].Topic != "a.two" || string(msgs[1].Payload) != "a.two" {
		t.Fatalf("got %+v", msgs)
	}
	if msgs[0].Publisher != pub.Endpoint() {
		t.Fatalf("Publisher %q, want the endpoint %q", msgs[0].Publisher, pub.Endpoint())
	}
}

func TestPublish_ReservedTopicAndClosed(t *testing.T) {
	pub := startPub(t, PublisherConfig{Channel: "c"})
	if err := pub.Publish(heartbeatTopic, nil); !errors.Is(err, ErrReservedTopic) {
		t.Fatalf("Publish heartbeat topic: %v", err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := pub.Publish("x", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
}

func TestAutomatic_DescriptorLifecycleAndReconnect(t *testing.T) {
	store := location.NewMemory()
	t.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	pub := startPub(t, PublisherConfig{Channel: "c", Store: store, TTL: time.Minute})
	pubs, err := store.ListPublishers(ctx, "c")
	if err != nil || len(pubs) != 1 {
		t.Fatalf("ListPublishers: %v %v", pubs, err)
	}
	want := location.Publisher{Channel: "c", RID: pub.RID(), Generation: pub.Generation(), Endpoint: pub.Endpoint()}
	if pubs[0] != want {
		t.Fatalf("descriptor %+v, want %+v", pubs[0], want)
	}

	var got collector
	sub := startSub(t, SubscriberConfig{Channel: "c", Automatic: true, Store: store, Handler: got.handle, ReceiveTimeout: 200 * time.Millisecond})
	key := pub.RID() + "/" + itoa(pub.Generation())
	waitUntil(t, "Live", func() bool { st, ok := stateOf(sub, key); return ok && st.State == StateLive })
	if err := pub.Publish("t", []byte("x")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "message", func() bool { return len(got.snapshot()) == 1 })
	if m := got.snapshot()[0]; m.Publisher != pub.RID() {
		t.Fatalf("Publisher %q, want RID %q", m.Publisher, pub.RID())
	}

	// Close deletes the descriptor; the entry times out, then disappears.
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	if pubs, _ := store.ListPublishers(ctx, "c"); len(pubs) != 0 {
		t.Fatalf("descriptor left after Close: %v", pubs)
	}
	waitUntil(t, "entry removed", func() bool { _, ok := stateOf(sub, key); return !ok })

	// A new lifecycle is a new entry.
	pub2 := startPub(t, PublisherConfig{Channel: "c", Store: store, TTL: time.Minute, RID: pub.RID()})
	key2 := pub2.RID() + "/" + itoa(pub2.Generation())
	waitUntil(t, "new generation Live", func() bool { st, ok := stateOf(sub, key2); return ok && st.State == StateLive })
}

func TestManual_ReconnectsAfterPublisherRestart(t *testing.T) {
	pub := startPub(t, PublisherConfig{Channel: "c"})
	ep := pub.Endpoint()
	sub := startSub(t, SubscriberConfig{Channel: "c", Endpoints: []string{ep}, ReceiveTimeout: 150 * time.Millisecond})
	waitUntil(t, "Live", func() bool { st, _ := stateOf(sub, ep); return st.State == StateLive })
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "TimedOut", func() bool { st, _ := stateOf(sub, ep); return st.State == StateTimedOut })
	_ = startPub(t, PublisherConfig{Channel: "c", Listen: ep})
	waitUntil(t, "Live again", func() bool { st, _ := stateOf(sub, ep); return st.State == StateLive })
}

func TestSubscriber_CloseIdempotent(t *testing.T) {
	sub := startSub(t, SubscriberConfig{Channel: "c", Endpoints: []string{"tcp://127.0.0.1:1"}})
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
}

func itoa(u uint64) string { return strconv.FormatUint(u, 10) }
