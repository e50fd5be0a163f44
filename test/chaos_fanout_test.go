package test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/internal/faults"
	"github.com/zlink-go/zlink/supervisor"
)

// TestChaos_FanoutKindsComeBackWhole completes the chaos table with the
// fanout actor kinds: a panic injected into the publisher or the
// subscriber of a host while messages flow; the tree shows the restart and
// delivery resumes on the same endpoint.
func TestChaos_FanoutKindsComeBackWhole(t *testing.T) {
	for _, role := range []string{"publisher", "subscriber"} {
		t.Run(role, func(t *testing.T) {
			sink := &msgSink{}
			o := zlink.NewOptions().SetLocationStore(memStore(t)).
				AddFanoutPublisher(fanout.PublisherConfig{Channel: "news", HeartbeatInterval: 50 * time.Millisecond, TTL: time.Second}).
				AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Automatic: true, Handler: sink.handle,
					PollInterval: 20 * time.Millisecond, ReceiveTimeout: 500 * time.Millisecond})
			h := startHost(t, o)
			pub, sub := h.Publisher("news"), h.Subscriber("news")
			endpoint := pub.Endpoint()
			live := func() bool {
				st := sub.Status()
				return len(st) == 1 && st[0].State == fanout.StateLive
			}
			waitFor(t, "subscriber live", 5*time.Second, live)
			// Messages flow before, during and after the fault; a publish
			// during the restart ends with a typed error, never a hang.
			i := 0
			publish := func() {
				i++
				if err := pub.Publish("scores", []byte(strconv.Itoa(i))); err != nil && !errors.Is(err, fanout.ErrRestarting) {
					t.Fatalf("publish %d: %v", i, err)
				}
			}
			waitFor(t, "messages delivered", 5*time.Second, func() bool { publish(); return sink.count() >= 5 })
			path := "/host/fanout:news/" + role
			if err := faults.InjectPanic(h, path, "chaos"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the restart in the tree", 10*time.Second, func() bool {
				n, ok := treeNode(h, path)
				return ok && n.Restarts >= 1 && n.State == supervisor.Running &&
					n.LastFailure != nil && n.LastFailure.Reason == "chaos"
			})
			before := sink.count()
			waitFor(t, "delivery resumed", 10*time.Second, func() bool { publish(); return live() && sink.count() > before+3 })
			if pub.Endpoint() != endpoint {
				t.Fatalf("the publisher moved from %s to %s", endpoint, pub.Endpoint())
			}
			if err := pub.Err(); err != nil {
				t.Fatalf("publisher failed: %v", err)
			}
		})
	}
}
