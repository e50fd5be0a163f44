package transport_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// goroutines zmq4 itself leaks (measured)
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*routerQReader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
	)
}

// pair is one listening and one dialing transport (two hosts).
type pair struct {
	listen, dial transport.Transport
}

// implementations are every Transport, each checked by the same suite: the
// guarded zmq4 one on real loopback sockets, and the in-memory twin.
func implementations(t *testing.T) map[string]func(t *testing.T) pair {
	return map[string]func(t *testing.T) pair{
		"zmq4": func(t *testing.T) pair {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			cfg := transport.ZMQConfig{Guard: zguard.DefaultConfig(), ListenerID: "router/test", DialTimeout: 2 * time.Second}
			return pair{listen: transport.NewZMQ(ctx, cfg), dial: transport.NewZMQ(ctx, cfg)}
		},
		"zmq4+tls": func(t *testing.T) pair {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			ca := tlstest.NewCA(t, "mesh CA")
			mk := func() transport.Transport {
				cfg := transport.ZMQConfig{Guard: zguard.DefaultConfig(), ListenerID: "router/test", DialTimeout: 2 * time.Second}
				cfg.Guard.TLS = newTLS(t, ca, meshID, meshID)
				return transport.NewZMQ(ctx, cfg)
			}
			return pair{listen: mk(), dial: mk()}
		},
		"memnet": func(t *testing.T) pair {
			nw := memnet.New(1)
			return pair{listen: nw.Host("l"), dial: nw.Host("d")}
		},
	}
}

type closed struct {
	mu  sync.Mutex
	ids []string
}

// has reports whether a connection key with identity id was reported.
func (c *closed) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.ids {
		if transport.KeyIdentity(x) == id {
			return true
		}
	}
	return false
}

// hasKey reports whether key itself was reported.
func (c *closed) hasKey(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.ids, key)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
	}
}

func TestTransport_Suite(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			p := mk(t)
			var cl closed
			ln, err := p.listen.Listen("tcp://127.0.0.1:0", transport.Events{OnClosed: func(id string, _ error) {
				cl.mu.Lock()
				cl.ids = append(cl.ids, id)
				cl.mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			addr, ok := ln.Addr().(*net.TCPAddr)
			if !ok || addr.Port == 0 {
				t.Fatalf("Addr = %v, want a bound TCP address", ln.Addr())
			}
			ep := "tcp://" + addr.String()
			ctx := context.Background()
			c, err := p.dial.Dial(ctx, ep, "pipe-1")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			// Dialer → listener, named by the connection's key (its
			// dialer's identity within); the sender may reuse its buffer
			// once Send returns.
			buf := []byte("hello")
			if err := c.Send(buf); err != nil {
				t.Fatal(err)
			}
			copy(buf, "XXXXX")
			id, f, err := ln.Recv()
			if err != nil || transport.KeyIdentity(id) != "pipe-1" || string(f) != "hello" {
				t.Fatalf("listener Recv = %q %q %v", id, f, err)
			}
			// Listener → the pipe by its key; an unknown one is dropped.
			if err := ln.Send([]byte("nobody"), []byte("lost")); err != nil {
				t.Fatalf("send to an unknown identity = %v, want a silent drop", err)
			}
			if err := ln.Send([]byte(id), []byte("back")); err != nil {
				t.Fatal(err)
			}
			if f, err := c.Recv(); err != nil || string(f) != "back" {
				t.Fatalf("conn Recv = %q %v", f, err)
			}

			// A closed dialer is reported by its key.
			_ = c.Close()
			waitFor(t, "OnClosed(pipe-1)", func() bool { return cl.has("pipe-1") })
			if !cl.hasKey(id) {
				t.Fatalf("OnClosed reported %v, not the key %q", cl.ids, id)
			}

			// The listener closing ends its dialers' Recv.
			c2, err := p.dial.Dial(ctx, ep, "pipe-2")
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			if err := c2.Send([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			if id, _, err := ln.Recv(); err != nil || transport.KeyIdentity(id) != "pipe-2" {
				t.Fatalf("listener Recv = %q %v", id, err)
			}
			recvErr := make(chan error, 1)
			go func() {
				_, err := c2.Recv()
				recvErr <- err
			}()
			_ = ln.Close()
			select {
			case err := <-recvErr:
				if err == nil {
					t.Fatal("Recv on a dialer whose listener closed returned no error")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Recv on a dialer whose listener closed did not return")
			}
			if _, _, err := ln.Recv(); !errors.Is(err, transport.ErrClosed) {
				t.Fatalf("listener Recv after Close = %v, want ErrClosed", err)
			}
			_ = c2.Close()
			if _, err := c2.Recv(); !errors.Is(err, transport.ErrClosed) {
				t.Fatalf("Recv after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestTransport_BadEndpoint(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			p := mk(t)
			if _, err := p.listen.Listen("udp://127.0.0.1:0", transport.Events{}); !errors.Is(err, transport.ErrBadEndpoint) {
				t.Fatalf("Listen(udp://) = %v, want ErrBadEndpoint", err)
			}
			if _, err := p.dial.Dial(context.Background(), "127.0.0.1:1", "x"); !errors.Is(err, transport.ErrBadEndpoint) {
				t.Fatalf("Dial(no scheme) = %v, want ErrBadEndpoint", err)
			}
		})
	}
}
