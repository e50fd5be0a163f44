package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
)

// pubMaxFrame bounds what a PUB accepts from subscribers: only
// subscription frames (one byte + topic).
const pubMaxFrame = 64 << 10

// Publisher is one bound PUB socket of a fanout channel, owned by a
// supervised actor (pubActor). It never dials. Its methods are safe for
// concurrent use.
//
// The lifecycle (RID, generation, endpoint) belongs to the Publisher and
// survives restarts of its actor: a restarted actor binds the same endpoint
// again and publishes the same descriptor, so subscribers simply re-dial.
type Publisher struct {
	cfg PublisherConfig
	rid string
	gen uint64
	log zerolog.Logger
	h   *host

	// Written by the first incarnation before StartPublisher returns; read
	// only afterwards.
	endpoint string // advertised
	bind     string // bound endpoint ("zgtcp://ip:port") every restart binds again

	// sock is the current incarnation's PUB socket; nil while restarting.
	sock    atomic.Pointer[zmq4.Socket]
	started chan error // the first incarnation's outcome
	group   group
	closed  atomic.Bool
	failed  atomic.Pointer[error]

	closeOnce sync.Once
	closeErr  error

	// testRebind, when set, runs in a restart before the endpoint is bound
	// again (tests occupy the port there).
	testRebind func(endpoint string)
}

// StartPublisher spawns the publisher's actor, which binds the PUB socket,
// publishes the fanout publisher descriptor when cfg.Store is set
// (automatic), and starts the heartbeat and lease renewal. It returns once
// that first setup succeeded or failed. ctx bounds startup only.
func StartPublisher(ctx context.Context, cfg PublisherConfig) (*Publisher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	zguard.Register()
	p := &Publisher{cfg: cfg, rid: cfg.RID, gen: ident.Generation(), started: make(chan error, 1)}
	if p.rid == "" {
		p.rid = "fpub-" + ident.Hex(6)
	}
	p.log = cfg.Logger.With().Str("fanout", cfg.Channel).Str("rid", p.rid).Logger()
	p.bind, _ = zguard.Endpoint(cfg.Listen) // checked by validate
	h := newHost(cfg.System, cfg.Parent, cfg.Logger)
	p.h = h
	if err := h.spawn("publisher", func() actors.Actor { return &pubActor{p: p} }); err != nil {
		return nil, err
	}
	var err error
	select {
	case err = <-p.started:
	case <-ctx.Done():
		err = ctx.Err()
	case <-h.ref.Done():
		err = h.failure(h.ref.Path())
	}
	if err != nil {
		p.closed.Store(true)
		h.stop()
		p.group.Close()
		if cfg.Store != nil { // a descriptor written before ctx ended
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = cfg.Store.DeletePublisher(dctx, cfg.Channel, p.rid, p.gen)
			cancel()
		}
		return nil, fmt.Errorf("zlink: fanout %s: start publisher: %w", cfg.Channel, err)
	}
	p.log.Info().Str("endpoint", p.endpoint).Bool("automatic", cfg.Store != nil).Msg("fanout publisher started")
	return p, nil
}

func (p *Publisher) descriptor() location.Publisher {
	return location.Publisher{Channel: p.cfg.Channel, RID: p.rid, Generation: p.gen, Endpoint: p.endpoint}
}

// Publish queues payload under topic for every subscriber of the topic. It
// never waits for a subscriber: past SendHWM queued messages it drops.
// payload is copied. Topics starting with 0xFF are reserved. While the
// publisher's actor restarts it fails with ErrRestarting; after a failure
// for good with ErrFailed.
func (p *Publisher) Publish(topic string, payload []byte) error {
	if reserved(topic) {
		return fmt.Errorf("%w: %q", ErrReservedTopic, topic)
	}
	if p.closed.Load() {
		return ErrClosed
	}
	if err := p.Err(); err != nil {
		return err
	}
	sp := p.sock.Load()
	if sp == nil {
		return ErrRestarting
	}
	return (*sp).SendMulti(zmq4.NewMsgFrom([]byte(topic), append([]byte(nil), payload...)))
}

// Endpoint returns the actual bound endpoint, "tcp://host:port". It stays
// the same across restarts of the publisher's actor.
func (p *Publisher) Endpoint() string { return p.endpoint }

// RID returns the publisher lifecycle RID.
func (p *Publisher) RID() string { return p.rid }

// Generation returns the lifecycle generation (non-zero, new per start).
func (p *Publisher) Generation() uint64 { return p.gen }

// Path returns the publisher actor's path in its actor system's tree.
func (p *Publisher) Path() string { return p.h.ref.Path() }

// Err returns nil while the publisher runs or restarts, and an error
// matching ErrFailed once its actor stopped for good without Close.
func (p *Publisher) Err() error {
	if e := p.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// Close stops the publisher's actor (which closes the socket), waits for
// its goroutines, and deletes the descriptor (automatic). Idempotent. A
// descriptor already gone is not an error.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.h.stop()
		p.group.Close()
		if p.cfg.Store != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := p.cfg.Store.DeletePublisher(ctx, p.cfg.Channel, p.rid, p.gen)
			cancel()
			if err != nil && !errors.Is(err, location.ErrNotFound) {
				p.closeErr = fmt.Errorf("zlink: fanout %s: delete descriptor: %w", p.cfg.Channel, err)
			}
		}
		p.log.Info().Msg("fanout publisher closed")
	})
	return p.closeErr
}
