package interop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/fanout"
)

// A libzmq SUB dials a ZLink publisher (its guarded listener answers the
// staged greeting) and receives [topic, payload].
func TestInterop_LibzmqSubscriberOfZLinkPublisher(t *testing.T) {
	needPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := fanout.StartPublisher(ctx, fanout.PublisherConfig{Channel: "news", Logger: testLogger(t),
		HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pub.Close(); err != nil {
			t.Errorf("publisher Close: %v", err)
		}
	}()
	p := startPeer(t, "sub", map[string]any{"endpoint": pub.Endpoint(), "topic": "t"})
	p.waitLine("ready", 10*time.Second)
	// A subscriber sees nothing published before its subscription arrived:
	// publish until it has one.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-p.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			_ = pub.Publish("t", []byte("zlink"))
		}
	}()
	lines := p.wait(30 * time.Second)
	<-done
	expectLines(t, lines, "ok sub got zlink")
}

// A ZLink subscriber dials a libzmq PUB and receives its messages.
func TestInterop_ZLinkSubscriberOfLibzmqPublisher(t *testing.T) {
	needPython(t)
	p := startPeer(t, "pub", map[string]any{"topic": "t"})
	ep := strings.TrimPrefix(p.waitLine("endpoint ", 10*time.Second), "endpoint ")
	var (
		mu  sync.Mutex
		got []fanout.Message
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := fanout.StartSubscriber(ctx, fanout.SubscriberConfig{Channel: "news", Endpoints: []string{ep},
		Topics: []string{"t"}, Logger: testLogger(t), Handler: func(m fanout.Message) {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sub.Close(); err != nil {
			t.Errorf("subscriber Close: %v", err)
		}
	}()
	waitFor(t, "a message from the libzmq PUB", 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	m := got[0]
	mu.Unlock()
	if m.Topic != "t" || !strings.HasPrefix(string(m.Payload), "libzmq-") || m.Publisher != ep {
		t.Fatalf("got %+v", m)
	}
}
