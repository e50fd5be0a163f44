package test

import (
	"sync"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
)

// msgSink collects fanout messages.
type msgSink struct {
	mu  sync.Mutex
	got []fanout.Message
}

func (s *msgSink) handle(m fanout.Message) {
	s.mu.Lock()
	s.got = append(s.got, m)
	s.mu.Unlock()
}

func (s *msgSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func TestFanout_StartedByTheHost(t *testing.T) {
	t.Run("manual", func(t *testing.T) {
		op := zlink.NewOptions().AddFanoutPublisher(fanout.PublisherConfig{Channel: "news", HeartbeatInterval: 50 * time.Millisecond})
		hp := startHost(t, op)
		pub := hp.Publisher("news")
		if pub == nil {
			t.Fatal("no publisher on the host")
		}
		sink := &msgSink{}
		os := zlink.NewOptions().AddFanoutSubscriber(fanout.SubscriberConfig{
			Channel: "news", Endpoints: []string{pub.Endpoint()}, Handler: sink.handle, ReceiveTimeout: time.Second,
		})
		hs := startHost(t, os)
		waitFor(t, "subscriber live", 5*time.Second, func() bool {
			st := hs.Subscriber("news").Status()
			return len(st) == 1 && st[0].State == fanout.StateLive
		})
		if err := pub.Publish("scores", []byte("1:0")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "message delivered", 5*time.Second, func() bool { return sink.count() == 1 })
		if _, ok := findNode(hs.Tree(), "fanout:news/subscriber"); !ok {
			t.Fatal("the subscriber is not in the tree")
		}
		if _, ok := findNode(hp.Tree(), "fanout:news/publisher"); !ok {
			t.Fatal("the publisher is not in the tree")
		}
	})
	t.Run("automatic in one process", func(t *testing.T) {
		sink := &msgSink{}
		o := zlink.NewOptions().SetLocationStore(memStore(t)).
			AddFanoutPublisher(fanout.PublisherConfig{Channel: "news", HeartbeatInterval: 50 * time.Millisecond, TTL: time.Second}).
			AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Automatic: true, Handler: sink.handle,
				PollInterval: 20 * time.Millisecond, ReceiveTimeout: time.Second})
		h := startHost(t, o)
		waitFor(t, "subscriber found the publisher", 5*time.Second, func() bool {
			st := h.Subscriber("news").Status()
			return len(st) == 1 && st[0].State == fanout.StateLive
		})
		if err := h.Publisher("news").Publish("scores", []byte("2:1")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "message delivered", 5*time.Second, func() bool { return sink.count() == 1 })
	})
}
