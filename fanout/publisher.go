package fanout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
)

// pubMaxFrame bounds what a PUB accepts from subscribers: only
// subscription frames (one byte + topic).
const pubMaxFrame = 64 << 10

// Publisher is one bound PUB socket of a fanout channel. It never dials.
// Its methods are safe for concurrent use.
type Publisher struct {
	cfg      PublisherConfig
	rid      string
	gen      uint64
	endpoint string
	sock     zmq4.Socket
	log      zerolog.Logger

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// StartPublisher binds the PUB socket, publishes the fanout publisher
// descriptor when cfg.Store is set (automatic), and starts the heartbeat
// and lease renewal. ctx bounds startup only.
func StartPublisher(ctx context.Context, cfg PublisherConfig) (*Publisher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	zguard.Register()
	p := &Publisher{cfg: cfg, rid: cfg.RID, gen: ident.Generation()}
	if p.rid == "" {
		p.rid = "fpub-" + ident.Hex(6)
	}
	var sctx context.Context
	sctx, p.cancel = context.WithCancel(context.Background())
	g := zguard.DefaultConfig()
	g.WriteTimeout = cfg.WriteTimeout
	g.MaxFrame = pubMaxFrame
	p.sock = zmq4.NewPub(zguard.WithConfig(sctx, g))
	if err := p.sock.SetOption(zmq4.OptionHWM, cfg.SendHWM); err != nil {
		return nil, p.abort(fmt.Errorf("zlink: fanout %s: set hwm: %w", cfg.Channel, err))
	}
	lep, _ := zguard.Endpoint(cfg.Listen) // checked by validate
	if err := p.sock.Listen(lep); err != nil {
		return nil, p.abort(fmt.Errorf("zlink: fanout %s: listen %s: %w", cfg.Channel, cfg.Listen, err))
	}
	p.endpoint = ident.Advertised(p.sock.Addr(), cfg.AdvertiseHost)
	p.log = cfg.Logger.With().Str("fanout", cfg.Channel).Str("rid", p.rid).Str("endpoint", p.endpoint).Logger()
	if cfg.Store != nil {
		if err := cfg.Store.PutPublisher(ctx, p.descriptor(), cfg.TTL); err != nil {
			return nil, p.abort(fmt.Errorf("zlink: fanout %s: publish descriptor: %w", cfg.Channel, err))
		}
	}
	p.wg.Add(1)
	go p.run(sctx)
	p.log.Info().Bool("automatic", cfg.Store != nil).Msg("fanout publisher started")
	return p, nil
}

// abort releases a half-started publisher.
func (p *Publisher) abort(err error) error {
	p.closed.Store(true)
	p.cancel()
	p.closeSocket()
	return err
}

func (p *Publisher) descriptor() location.Publisher {
	return location.Publisher{Channel: p.cfg.Channel, RID: p.rid, Generation: p.gen, Endpoint: p.endpoint}
}

// run sends heartbeats and renews the descriptor lease until ctx ends.
func (p *Publisher) run(ctx context.Context) {
	defer p.wg.Done()
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
			_ = p.sock.SendMulti(zmq4.NewMsgFrom([]byte(heartbeatTopic), beat))
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

// Publish queues payload under topic for every subscriber of the topic. It
// never waits for a subscriber: past SendHWM queued messages it drops.
// payload is copied. Topics starting with 0xFF are reserved.
func (p *Publisher) Publish(topic string, payload []byte) error {
	if reserved(topic) {
		return fmt.Errorf("%w: %q", ErrReservedTopic, topic)
	}
	if p.closed.Load() {
		return ErrClosed
	}
	return p.sock.SendMulti(zmq4.NewMsgFrom([]byte(topic), append([]byte(nil), payload...)))
}

// Endpoint returns the actual bound endpoint, "tcp://host:port".
func (p *Publisher) Endpoint() string { return p.endpoint }

// RID returns the publisher lifecycle RID.
func (p *Publisher) RID() string { return p.rid }

// Generation returns the lifecycle generation (non-zero, new per start).
func (p *Publisher) Generation() uint64 { return p.gen }

// Close stops the heartbeat and renewal, deletes the descriptor (automatic)
// and closes the socket. Idempotent; waits for the publisher's goroutines.
// A descriptor already gone is not an error.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.cancel()
		p.wg.Wait()
		if p.cfg.Store != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := p.cfg.Store.DeletePublisher(ctx, p.cfg.Channel, p.rid, p.gen)
			cancel()
			if err != nil && !errors.Is(err, location.ErrNotFound) {
				p.closeErr = fmt.Errorf("zlink: fanout %s: delete descriptor: %w", p.cfg.Channel, err)
			}
		}
		p.closeSocket()
		p.log.Info().Msg("fanout publisher closed")
	})
	return p.closeErr
}

// closeSocket closes the PUB socket. zmq4 v0.17.0 never stops the PUB
// writer goroutine (pubMWriter.run): socket Close does not close the
// writer, so one goroutine per PUB socket stays blocked forever
// (ZMQ4-NOTES). It holds no connection and no file descriptor.
func (p *Publisher) closeSocket() { _ = p.sock.Close() }
