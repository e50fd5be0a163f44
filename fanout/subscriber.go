package fanout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
)

// Reconnect backoff of one publisher's SUB socket.
const (
	reconnectMin = 20 * time.Millisecond
	reconnectMax = time.Second
)

// PublisherStatus is a subscriber's snapshot of one publisher.
type PublisherStatus struct {
	// Key is "<RID>/<generation>" (automatic) or the endpoint (manual).
	Key      string
	Endpoint string
	State    PublisherState
	// LastMessage is when the last message or heartbeat arrived; zero if
	// none yet.
	LastMessage time.Time
	// Received counts messages and heartbeats from this publisher.
	Received uint64
	// Withdrawn: (automatic) the descriptor is no longer listed; the entry
	// is dropped once it has been TimedOut for one ReceiveTimeout.
	Withdrawn bool
}

// Subscriber holds one dedicated SUB socket per publisher, owned by a
// supervised actor (subActor). Its methods are safe for concurrent use.
//
// A restart of the actor rebuilds the publishers whole from their source:
// the configured endpoints (manual) or a fresh ListPublishers (automatic),
// and dials each one again.
type Subscriber struct {
	cfg  SubscriberConfig
	gcfg zguard.Config
	now  func() time.Time
	log  zerolog.Logger
	h    *host

	// seed is the startup listing (automatic), used by the first
	// incarnation only; started is closed once it is set up.
	seed    []location.Publisher
	started chan struct{}

	cur    atomic.Pointer[subRun] // the running incarnation; nil while restarting
	group  group
	closed atomic.Bool
	failed atomic.Pointer[error]

	closeOnce sync.Once
}

// StartSubscriber validates cfg and spawns the subscriber's actor.
// Automatic mode lists the channel's publishers once with ctx (a store
// failure fails startup) and then polls every PollInterval; manual mode
// opens one SUB socket per endpoint and never reads the store. It returns
// once the actor has set up its publishers.
func StartSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	zguard.Register()
	s := &Subscriber{cfg: cfg, now: time.Now, started: make(chan struct{})}
	s.cfg.Topics = append([]string(nil), cfg.Topics...)
	if len(s.cfg.Topics) == 0 {
		s.cfg.Topics = []string{""}
	}
	s.gcfg = zguard.DefaultConfig()
	s.gcfg.MaxFrame = cfg.MaxMessageSize
	s.log = cfg.Logger.With().Str("fanout", cfg.Channel).Logger()
	if cfg.Automatic {
		pubs, err := cfg.Store.ListPublishers(ctx, cfg.Channel)
		if err != nil {
			return nil, err
		}
		s.seed = pubs
	}
	s.h = newHost(cfg.System, cfg.Parent, cfg.Logger)
	if err := s.h.spawn("subscriber", func() actors.Actor { return &subActor{s: s} }); err != nil {
		return nil, err
	}
	select {
	case <-s.started:
	case <-s.h.ref.Done():
		err := s.h.failure(s.h.ref.Path())
		_ = s.Close()
		return nil, fmt.Errorf("zlink: fanout %s: start subscriber: %w", cfg.Channel, err)
	case <-ctx.Done():
		_ = s.Close()
		return nil, ctx.Err()
	}
	s.log.Info().Bool("automatic", cfg.Automatic).Msg("fanout subscriber started")
	return s, nil
}

// Status returns a snapshot of every publisher, sorted by Key. It is empty
// while the subscriber's actor restarts.
func (s *Subscriber) Status() []PublisherStatus {
	r := s.cur.Load()
	if r == nil {
		return []PublisherStatus{}
	}
	r.mu.Lock()
	out := make([]PublisherStatus, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, PublisherStatus{
			Key: e.key, Endpoint: e.endpoint, State: e.live.state,
			LastMessage: e.live.last, Received: e.live.received, Withdrawn: e.withdrawn,
		})
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Path returns the subscriber actor's path in its actor system's tree.
func (s *Subscriber) Path() string { return s.h.ref.Path() }

// Err returns nil while the subscriber runs or restarts, and an error
// matching ErrFailed once its actor stopped for good without Close.
func (s *Subscriber) Err() error {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// Close stops the subscriber's actor, which closes every SUB socket, and
// waits for the subscriber's goroutines. Idempotent.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.h.stop()
		s.group.Close()
		s.log.Info().Msg("fanout subscriber closed")
	})
	return nil
}

// fail records that the actor at path stopped for good without Close.
func (s *Subscriber) fail(path string) {
	err := s.h.failure(path)
	s.failed.Store(&err)
	s.h.markFailed("subscriber", err)
	s.log.Error().Err(err).Msg("fanout subscriber failed")
}

// sleepCtx waits d or until ctx ends; false if ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter scales d by a random factor in [0.5, 1.5).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}
