package fanout

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/supervisor"
)

// pubActor owns one incarnation of a publisher: its PUB socket and the
// goroutine that sends heartbeats and renews the descriptor. A restart
// rebuilds it whole: the old incarnation releases everything on
// *actors.Restarting (without waiting), the new one binds the same endpoint
// and starts over on *actors.Started. Nothing in Receive blocks: store I/O
// runs on the incarnation's tracked goroutine.
type pubActor struct {
	p      *Publisher
	sock   zmq4.Socket
	cancel context.CancelFunc
}

var _ actors.Actor = (*pubActor)(nil)

func (a *pubActor) Receive(c *actors.Context) {
	switch m := c.Message().(type) {
	case *actors.Started:
		a.start()
	case *actors.Restarting, *actors.Stopping:
		a.release()
	case *actors.Stopped:
		a.release()
		if !a.p.closed.Load() {
			a.p.fail(c.Self().Path())
		}
	case crash:
		panic(m.reason)
	}
}

// start binds the PUB socket (the configured endpoint the first time, the
// endpoint bound then on every restart) and starts the incarnation's
// goroutine. The first incarnation reports its outcome to StartPublisher;
// a restart that cannot bind the endpoint again is unrecoverable.
func (a *pubActor) start() {
	p := a.p
	first := p.endpoint == ""
	if !first && p.testRebind != nil {
		p.testRebind(p.endpoint)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	g := zguard.DefaultConfig()
	g.WriteTimeout = p.cfg.WriteTimeout
	g.MaxFrame = pubMaxFrame
	a.sock = zmq4.NewPub(zguard.WithConfig(ctx, g))
	err := a.sock.SetOption(zmq4.OptionHWM, p.cfg.SendHWM)
	if err == nil {
		if err = a.sock.Listen(p.bind); err != nil {
			err = fmt.Errorf("listen %s: %w", zguard.TCPEndpoint(p.bind), err)
		}
	}
	if err != nil {
		if first {
			p.started <- err // StartPublisher stops this actor
			return
		}
		panic(fmt.Errorf("zlink: fanout %s: bind the endpoint again: %w: %w", p.cfg.Channel, err, supervisor.ErrUnrecoverable))
	}
	if first {
		addr := a.sock.Addr()
		p.endpoint = ident.Advertised(addr, p.cfg.AdvertiseHost)
		p.bind, _ = zguard.Endpoint("tcp://" + addr.String())
	}
	sock := a.sock
	p.sock.Store(&sock)
	if !p.group.Go(func() { p.run(ctx, sock, first) }) && first {
		p.started <- ErrClosed
		return
	}
	if !first {
		p.log.Info().Str("endpoint", p.endpoint).Msg("fanout publisher restarted")
	}
}

// release stops the incarnation's goroutine and closes its socket. It does
// not wait: Close waits for the goroutines.
func (a *pubActor) release() {
	if a.cancel != nil {
		a.cancel()
	}
	if a.sock != nil {
		if sp := a.p.sock.Load(); sp != nil && *sp == a.sock {
			a.p.sock.CompareAndSwap(sp, nil)
		}
		// zmq4 v0.17.0 never stops the PUB writer goroutine
		// (pubMWriter.run): one goroutine per PUB socket stays blocked
		// forever. It holds no connection and no file descriptor.
		_ = a.sock.Close()
		a.sock = nil
	}
}

// fail records that the actor at path stopped for good without Close.
func (p *Publisher) fail(path string) {
	err := p.h.failure(path)
	p.failed.Store(&err)
	p.h.markFailed("publisher", err)
	p.log.Error().Err(err).Msg("fanout publisher failed")
}

// run publishes the descriptor (automatic), then sends heartbeats and
// renews the lease until ctx ends. In the first incarnation the first
// descriptor write decides StartPublisher's outcome.
func (p *Publisher) run(ctx context.Context, sock zmq4.Socket, first bool) {
	if p.cfg.Store != nil {
		pctx, cancel := context.WithTimeout(ctx, max(p.cfg.TTL, 5*time.Second))
		err := p.cfg.Store.PutPublisher(pctx, p.descriptor(), p.cfg.TTL)
		cancel()
		if err != nil {
			err = fmt.Errorf("publish descriptor: %w", err)
		}
		if first {
			p.started <- err
			if err != nil {
				return
			}
		} else if err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("fanout publisher descriptor write failed")
		}
	} else if first {
		p.started <- nil
	}
	hb := time.NewTicker(p.cfg.HeartbeatInterval)
	defer hb.Stop()
	var renew <-chan time.Time
	if p.cfg.Store != nil {
		t := time.NewTicker(p.cfg.TTL / 3)
		defer t.Stop()
		renew = t.C
	}
	beat := []byte(p.rid + "/" + strconv.FormatUint(p.gen, 10))
	for {
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			_ = sock.SendMulti(zmq4.NewMsgFrom([]byte(heartbeatTopic), beat))
		case <-renew:
			rctx, cancel := context.WithTimeout(ctx, p.cfg.TTL/3)
			err := p.cfg.Store.PutPublisher(rctx, p.descriptor(), p.cfg.TTL)
			cancel()
			if err != nil && ctx.Err() == nil {
				p.log.Warn().Err(err).Msg("fanout publisher lease renewal failed")
			}
		}
	}
}
