// Command fanout runs classic fanout (PUB/SUB) in one process: a publisher
// of channel "scores" and a subscriber given its endpoint by hand. The
// subscriber's handler receives every message in order per publisher.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	po := zlink.NewOptions().AddFanoutPublisher(fanout.PublisherConfig{
		Channel: "scores", Listen: "tcp://127.0.0.1:0", HeartbeatInterval: 50 * time.Millisecond,
	})
	ph, err := zlink.Start(ctx, po)
	if err != nil {
		return err
	}
	defer stop(ph)
	pub := ph.Publisher("scores")

	const n = 3
	got := make(chan fanout.Message, n)
	so := zlink.NewOptions().AddFanoutSubscriber(fanout.SubscriberConfig{
		Channel: "scores", Endpoints: []string{pub.Endpoint()}, Topics: []string{"match/"},
		Handler: func(m fanout.Message) { got <- m }, // runs on the receive goroutine: must not block long
	})
	sh, err := zlink.Start(ctx, so)
	if err != nil {
		return err
	}
	defer stop(sh)

	// PUB/SUB drops what is published before the subscription is in place:
	// wait until the subscriber hears the publisher (its heartbeat).
	if err := waitLive(ctx, sh.Subscriber("scores")); err != nil {
		return err
	}
	for i := range n {
		if err := pub.Publish("match/7", fmt.Appendf(nil, "%d:%d", i+1, i)); err != nil {
			return err
		}
	}
	for range n {
		select {
		case m := <-got:
			fmt.Fprintf(out, "%s %s\n", m.Topic, m.Payload)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// waitLive waits until the subscriber's one publisher is Live. Fanout has
// no readiness event, so it reads the status on a short ticker.
func waitLive(ctx context.Context, s *fanout.Subscriber) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if st := s.Status(); len(st) == 1 && st[0].State == fanout.StateLive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func stop(h *zlink.Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Stop(ctx)
}
