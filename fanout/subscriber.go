package fanout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"

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

// Subscriber holds one dedicated SUB socket per publisher. Its methods are
// safe for concurrent use.
//
// Goroutines: one owner (run: store polling, liveness ticks, adding and
// removing publishers) and one receive goroutine per publisher. Lock: mu
// guards entries and each entry's liveness; it is a leaf lock held for no
// I/O and never while calling Handler.
type Subscriber struct {
	cfg  SubscriberConfig
	gcfg zguard.Config
	now  func() time.Time
	log  zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry

	closeOnce sync.Once
}

// entry is one publisher: one connection intent, one SUB socket at a time.
type entry struct {
	key       string
	endpoint  string
	publisher string // Message.Publisher
	live      liveness
	withdrawn bool
	cancel    context.CancelFunc
}

// StartSubscriber validates cfg and starts the subscriber. Automatic mode
// lists the channel's publishers once with ctx (a store failure fails
// startup) and then polls every PollInterval; manual mode opens one SUB
// socket per endpoint and never reads the store.
func StartSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	zguard.Register()
	s := &Subscriber{cfg: cfg, now: time.Now, entries: map[string]*entry{}}
	s.cfg.Topics = append([]string(nil), cfg.Topics...)
	if len(s.cfg.Topics) == 0 {
		s.cfg.Topics = []string{""}
	}
	s.gcfg = zguard.DefaultConfig()
	s.gcfg.MaxFrame = cfg.MaxMessageSize
	s.log = cfg.Logger.With().Str("fanout", cfg.Channel).Logger()
	s.ctx, s.cancel = context.WithCancel(context.Background())

	if cfg.Automatic {
		pubs, err := cfg.Store.ListPublishers(ctx, cfg.Channel)
		if err != nil {
			s.cancel()
			return nil, err
		}
		s.apply(pubs)
	} else {
		s.mu.Lock()
		for _, ep := range cfg.Endpoints {
			s.addLocked(ep, ep, ep)
		}
		s.mu.Unlock()
	}
	s.wg.Add(1)
	go s.run()
	s.log.Info().Bool("automatic", cfg.Automatic).Msg("fanout subscriber started")
	return s, nil
}

// run polls the store (automatic) and ticks liveness until Close.
func (s *Subscriber) run() {
	defer s.wg.Done()
	tick := time.NewTicker(max(s.cfg.ReceiveTimeout/8, time.Millisecond))
	defer tick.Stop()
	var poll <-chan time.Time
	if s.cfg.Automatic {
		t := time.NewTicker(s.cfg.PollInterval)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
			s.checkLiveness()
		case <-poll:
			ctx, cancel := context.WithTimeout(s.ctx, max(s.cfg.PollInterval, time.Second))
			pubs, err := s.cfg.Store.ListPublishers(ctx, s.cfg.Channel)
			cancel()
			if err != nil {
				if s.ctx.Err() == nil {
					s.log.Warn().Err(err).Msg("fanout list publishers failed")
				}
				continue // keep the current publishers; retry next poll
			}
			s.apply(pubs)
		}
	}
}

// apply reconciles the entries with the listed publishers of the channel:
// one entry per (RID, generation); unlisted entries become withdrawn.
func (s *Subscriber) apply(pubs []location.Publisher) {
	want := make(map[string]location.Publisher, len(pubs))
	for _, p := range pubs {
		if p.Channel != s.cfg.Channel {
			continue // defensive: never connect to another channel
		}
		if _, err := zguard.Endpoint(p.Endpoint); err != nil {
			s.log.Warn().Str("rid", p.RID).Str("endpoint", p.Endpoint).Msg("fanout publisher descriptor with unusable endpoint")
			continue
		}
		want[p.RID+"/"+strconv.FormatUint(p.Generation, 10)] = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.entries {
		_, listed := want[k]
		e.withdrawn = !listed
	}
	for k, p := range want {
		if _, ok := s.entries[k]; !ok {
			s.addLocked(k, p.Endpoint, p.RID)
		}
	}
}

// addLocked creates an entry and starts its receive goroutine.
func (s *Subscriber) addLocked(key, endpoint, publisher string) {
	if s.closed {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	e := &entry{key: key, endpoint: endpoint, publisher: publisher, live: newLiveness(s.now()), cancel: cancel}
	s.entries[key] = e
	s.wg.Add(1)
	go s.runConn(ctx, e)
	s.log.Debug().Str("peer", key).Str("endpoint", endpoint).Msg("fanout publisher added")
}

// checkLiveness times out silent publishers, each against its own clock,
// and drops withdrawn publishers that stayed TimedOut for ReceiveTimeout.
func (s *Subscriber) checkLiveness() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.entries {
		if e.live.check(now, s.cfg.ReceiveTimeout) {
			s.log.Warn().Str("peer", k).Msg("fanout publisher timed out")
		}
		if e.withdrawn && e.live.expired(now, s.cfg.ReceiveTimeout) {
			e.cancel()
			delete(s.entries, k)
			s.log.Debug().Str("peer", k).Msg("fanout publisher removed")
		}
	}
}

// heard records activity of e.
func (s *Subscriber) heard(e *entry) {
	now := s.now()
	s.mu.Lock()
	e.live.heard(now)
	s.mu.Unlock()
}

// runConn keeps one SUB socket connected to e's endpoint until ctx ends,
// replacing the socket after every lost connection.
func (s *Subscriber) runConn(ctx context.Context, e *entry) {
	defer s.wg.Done()
	ep, _ := zguard.Endpoint(e.endpoint) // checked before the entry was made
	log := s.log.With().Str("peer", e.key).Logger()
	backoff := reconnectMin
	for ctx.Err() == nil {
		sock := zmq4.NewSub(zguard.WithConfig(ctx, s.gcfg),
			zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(s.gcfg.HandshakeTimeout))
		for _, t := range s.cfg.Topics {
			_ = sock.SetOption(zmq4.OptionSubscribe, t)
		}
		_ = sock.SetOption(zmq4.OptionSubscribe, heartbeatTopic)
		if err := sock.Dial(ep); err != nil {
			_ = sock.Close()
			log.Debug().Err(err).Msg("fanout dial failed")
			if !sleepCtx(ctx, jitter(backoff)) {
				return
			}
			backoff = min(2*backoff, reconnectMax)
			continue
		}
		backoff = reconnectMin
		log.Debug().Msg("fanout connected")
		err := s.receive(sock, e)
		_ = sock.Close()
		if ctx.Err() == nil {
			log.Debug().Err(err).Msg("fanout connection lost")
		}
		// Another publisher answered at this endpoint (the one this entry
		// was made for is gone and the port was reused), or the entry's
		// descriptor was withdrawn: do not redial; the entry times out and
		// is removed, and the new publisher gets its own entry.
		if errors.Is(err, errWrongPublisher) || s.isWithdrawn(e) {
			return
		}
	}
}

// errWrongPublisher ends a connection whose heartbeats name another
// publisher lifecycle than the entry it was dialed for.
var errWrongPublisher = errors.New("zlink: fanout: another publisher answered at this endpoint")

func (s *Subscriber) isWithdrawn(e *entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.withdrawn
}

// receive reads messages until the connection is lost or ctx ends. In
// automatic mode the publisher must prove it is the entry's lifecycle: its
// heartbeat carries "rid/generation"; until the first matching heartbeat
// of a connection nothing counts as heard and nothing is delivered, and a
// heartbeat naming another lifecycle ends the connection.
func (s *Subscriber) receive(sock zmq4.Socket, e *entry) error {
	verified := !s.cfg.Automatic // manual entries are endpoints: nothing to verify
	for {
		msg, err := sock.Recv()
		if err != nil {
			return err
		}
		if len(msg.Frames) == 2 && string(msg.Frames[0]) == heartbeatTopic && !verified {
			if string(msg.Frames[1]) != e.key {
				return fmt.Errorf("%w: heartbeat %q, entry %s", errWrongPublisher, msg.Frames[1], e.key)
			}
			verified = true
		}
		if !verified {
			continue
		}
		s.heard(e)
		if len(msg.Frames) != 2 {
			continue // not ours; the publisher is alive, nothing to deliver
		}
		topic := string(msg.Frames[0])
		if topic == heartbeatTopic || s.cfg.Handler == nil {
			continue
		}
		s.cfg.Handler(Message{Publisher: e.publisher, Topic: topic, Payload: msg.Frames[1]})
	}
}

// Status returns a snapshot of every publisher, sorted by Key.
func (s *Subscriber) Status() []PublisherStatus {
	s.mu.Lock()
	out := make([]PublisherStatus, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, PublisherStatus{
			Key: e.key, Endpoint: e.endpoint, State: e.live.state,
			LastMessage: e.live.last, Received: e.live.received, Withdrawn: e.withdrawn,
		})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Close closes every SUB socket and waits for the subscriber's goroutines.
// Idempotent.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
		s.wg.Wait()
		s.log.Info().Msg("fanout subscriber closed")
	})
	return nil
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
