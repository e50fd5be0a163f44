package benchrun

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Raw zmq4: a ROUTER in the server process sends every message straight
// back to its sender; the client is one DEALER. Plain tcp://, one ZMQ
// message per request (what an application gets from zmq4 out of the box;
// the same baseline as the mesh bench, across processes).

func init() {
	cmpImpls["zmq4"] = cmpImpl{
		name:  "zmq4",
		label: "raw zmq4",
		about: "go-zeromq/zmq4 DEALER -> ROUTER echo, one ZMQ message per request",
		serve: cmpServeZMQ,
		dial:  cmpDialZMQ,
	}
}

func cmpServeZMQ(ctx context.Context, f cmpServerFlags) (string, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	router := zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("cmp-router")))
	if err := router.Listen("tcp://" + f.listen); err != nil {
		cancel()
		_ = router.Close()
		return "", nil, fmt.Errorf("benchrun: compare: zmq4 router listen: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := router.Recv()
			if err != nil {
				return
			}
			if err := router.Send(msg); err != nil {
				return
			}
		}
	}()
	stop := func() {
		cancel()
		_ = router.Close()
		<-done
	}
	return "tcp://" + router.Addr().String(), stop, nil
}

type cmpZmqClient struct {
	cancel context.CancelFunc
	dealer zmq4.Socket
}

func cmpDialZMQ(_ context.Context, endpoint string, _ cmpDialOpts) (cmpClient, error) {
	// The socket outlives the dial: its own context, cancelled at Close.
	ctx, cancel := context.WithCancel(context.Background())
	d := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(fmt.Sprintf("cmp-dealer-%d", time.Now().UnixNano()))))
	if err := d.Dial(endpoint); err != nil {
		cancel()
		_ = d.Close()
		return nil, fmt.Errorf("benchrun: compare: zmq4 dealer dial %s: %w", endpoint, err)
	}
	return &cmpZmqClient{cancel: cancel, dealer: d}, nil
}

func (c *cmpZmqClient) close() {
	c.cancel()
	_ = c.dealer.Close()
}

func (c *cmpZmqClient) lockstep(payload []byte, next func() bool) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		t0 := time.Now()
		if err := c.dealer.Send(zmq4.NewMsg(payload)); err != nil {
			return lat, fmt.Errorf("zmq4 send: %w", err)
		}
		msg, err := c.dealer.Recv()
		if err != nil {
			return lat, fmt.Errorf("zmq4 recv: %w", err)
		}
		if len(msg.Frames) != 1 || len(msg.Frames[0]) != len(payload) {
			return lat, errEchoMismatch
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// pipelined: a sender goroutine puts a token in a window channel before
// every send; the receiver takes one per echo (as zmqEcho.pipeline does in
// the one-process mesh bench).
func (c *cmpZmqClient) pipelined(payload []byte, window int, next func() bool) (got int, err error) {
	tokens := make(chan struct{}, window)
	sendErr := make(chan error, 1)
	go func() {
		defer close(tokens)
		for next() {
			tokens <- struct{}{}
			if err := c.dealer.Send(zmq4.NewMsg(payload)); err != nil {
				sendErr <- fmt.Errorf("zmq4 send: %w", err)
				_ = c.dealer.Close() // the receiver waits for an echo that will not come
				return
			}
		}
	}()
	for range tokens {
		msg, err := c.dealer.Recv()
		if err != nil {
			select {
			case serr := <-sendErr:
				err = serr
			default:
			}
			go func() { // end the sender
				for range tokens {
				}
			}()
			return got, fmt.Errorf("zmq4 recv: %w", err)
		}
		if len(msg.Frames) != 1 || len(msg.Frames[0]) != len(payload) {
			go func() {
				for range tokens {
				}
			}()
			return got, errEchoMismatch
		}
		got++
	}
	select {
	case serr := <-sendErr:
		return got, serr
	default:
	}
	return got, nil
}
