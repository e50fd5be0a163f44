package benchrun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// zmqEcho is the raw baseline of the mesh bench: a zmq4 ROUTER on loopback
// that sends every message straight back to its sender, and one DEALER
// talking to it. Plain tcp:// sockets, one ZMQ message per request: no
// batching, no guarded transport, no envelope — what an application gets
// from zmq4 out of the box.
type zmqEcho struct {
	ctx    context.Context
	cancel context.CancelFunc
	router zmq4.Socket
	dealer zmq4.Socket
	wg     sync.WaitGroup
}

// startZMQEcho binds the ROUTER on a free loopback port, starts its echo
// loop and connects the DEALER.
func startZMQEcho(parent context.Context) (*zmqEcho, error) {
	ctx, cancel := context.WithCancel(parent)
	e := &zmqEcho{ctx: ctx, cancel: cancel}
	e.router = zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("bench-router")))
	if err := e.router.Listen("tcp://127.0.0.1:0"); err != nil {
		cancel()
		_ = e.router.Close()
		return nil, fmt.Errorf("benchrun: zmq4 router listen: %w", err)
	}
	ep := "tcp://" + e.router.Addr().String()
	e.wg.Add(1)
	go e.serve()
	e.dealer = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("bench-dealer")))
	if err := e.dealer.Dial(ep); err != nil {
		e.close()
		return nil, fmt.Errorf("benchrun: zmq4 dealer dial %s: %w", ep, err)
	}
	return e, nil
}

// serve echoes every [identity, payload] message back to its identity.
func (e *zmqEcho) serve() {
	defer e.wg.Done()
	for {
		msg, err := e.router.Recv()
		if err != nil {
			return // socket closed
		}
		if err := e.router.Send(msg); err != nil {
			return
		}
	}
}

// close stops the echo loop and closes both sockets. Idempotent enough for
// the bench: sockets tolerate a second Close.
func (e *zmqEcho) close() {
	e.cancel()
	if e.dealer != nil {
		_ = e.dealer.Close()
	}
	_ = e.router.Close()
	e.wg.Wait()
}

// roundTrip sends payload and waits for its echo.
func (e *zmqEcho) roundTrip(payload []byte) error {
	if err := e.dealer.Send(zmq4.NewMsg(payload)); err != nil {
		return fmt.Errorf("benchrun: zmq4 send: %w", err)
	}
	msg, err := e.dealer.Recv()
	if err != nil {
		return fmt.Errorf("benchrun: zmq4 recv: %w", err)
	}
	if len(msg.Frames) != 1 || len(msg.Frames[0]) != len(payload) {
		return errEchoMismatch
	}
	return nil
}

var errEchoMismatch = errors.New("benchrun: echo reply does not match the request")

// pipeline keeps about inflight messages outstanding on the DEALER: the
// sender puts a token in a window channel of that capacity before every
// send, the receiver takes one token per echo. next is called before every
// send and says whether to send another; pipeline returns once every sent
// message came back, with the number of round trips.
func (e *zmqEcho) pipeline(payload []byte, inflight int, next func() bool) (got int, err error) {
	window := make(chan struct{}, inflight)
	sendErr := make(chan error, 1)
	defer func() {
		if err != nil { // unblock and end the sender
			_ = e.dealer.Close()
			go func() {
				for range window {
				}
			}()
		}
	}()
	go func() {
		defer close(window)
		for next() {
			window <- struct{}{}
			if err := e.dealer.Send(zmq4.NewMsg(payload)); err != nil {
				sendErr <- fmt.Errorf("benchrun: zmq4 send: %w", err)
				_ = e.dealer.Close() // the receiver waits for an echo that will not come
				return
			}
		}
	}()
	for range window {
		msg, err := e.dealer.Recv()
		if err != nil {
			select {
			case serr := <-sendErr:
				return got, serr
			default:
			}
			return got, fmt.Errorf("benchrun: zmq4 recv: %w", err)
		}
		if len(msg.Frames) != 1 || len(msg.Frames[0]) != len(payload) {
			return got, errEchoMismatch
		}
		got++
	}
	return got, nil
}

// zmqLockstep runs one round trip at a time until next says stop and
// returns each round trip's latency.
func zmqLockstep(e *zmqEcho, payload []byte, next func() bool) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		t0 := time.Now()
		if err := e.roundTrip(payload); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}
