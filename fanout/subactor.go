package fanout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
)

// subActor owns one incarnation of a subscriber (a subRun). It adds and
// removes publishers and ticks their liveness; store listings and the
// per-publisher connections run on tracked goroutines, which report back by
// message (listings, ticks) or under the run's leaf lock (heard).
// *actors.Restarting cancels the incarnation without waiting; the next
// *actors.Started rebuilds it from the configuration and the store.
type subActor struct {
	s   *Subscriber
	run *subRun
}

// subTick asks the actor to check liveness; subListed carries a listing.
type (
	subTick   struct{ run *subRun }
	subListed struct {
		run  *subRun
		pubs []location.Publisher
		err  error
	}
)

var _ actors.Actor = (*subActor)(nil)

func (a *subActor) Receive(c *actors.Context) {
	switch m := c.Message().(type) {
	case *actors.Started:
		a.start(c)
	case *actors.Restarting, *actors.Stopping:
		a.release()
	case *actors.Stopped:
		a.release()
		if !a.s.closed.Load() {
			a.s.fail(c.Self().Path())
		}
	case subTick:
		if m.run == a.run {
			m.run.checkLiveness()
		}
	case subListed:
		switch {
		case m.run != a.run:
		case m.err != nil:
			if m.run.ctx.Err() == nil {
				a.s.log.Warn().Err(m.err).Msg("fanout list publishers failed")
			}
		default:
			m.run.apply(m.pubs)
		}
	case crash:
		panic(m.reason)
	}
}

// start builds a new incarnation: its publishers (configured endpoints,
// the startup listing, or a fresh listing after a restart), and the
// goroutines that tick liveness and poll the store.
func (a *subActor) start(c *actors.Context) {
	s := a.s
	self := c.Self()
	r := &subRun{s: s, entries: map[string]*entry{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	send := func(m any) {
		if r.ctx.Err() == nil {
			_ = self.TellControl(m) // fails only once the actor stops
		}
	}
	a.run = r
	seeded := s.seed != nil
	switch {
	case !s.cfg.Automatic:
		r.mu.Lock()
		for _, ep := range s.cfg.Endpoints {
			r.addLocked(ep, ep, ep)
		}
		r.mu.Unlock()
	case s.seed != nil:
		r.apply(s.seed)
		s.seed = nil
	}
	if s.cfg.Automatic {
		s.group.Go(func() { r.poll(send, !seeded) })
	}
	s.group.Go(func() {
		every := max(s.cfg.ReceiveTimeout/8, 1)
		for sleepCtx(r.ctx, every) {
			send(subTick{run: r})
		}
	})
	s.cur.Store(r)
	select {
	case <-s.started:
		s.log.Info().Msg("fanout subscriber restarted")
	default:
		close(s.started)
	}
}

// release cancels the incarnation: its connections and goroutines end on
// their own; Close waits for them.
func (a *subActor) release() {
	if a.run == nil {
		return
	}
	a.run.cancel()
	a.s.cur.CompareAndSwap(a.run, nil)
}

// subRun is one incarnation of a subscriber. mu guards entries and each
// entry's liveness; it is a leaf lock held for no I/O and never while
// calling Handler.
type subRun struct {
	s      *Subscriber
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is one publisher: one connection intent, one SUB socket at a time.
type entry struct {
	key       string
	endpoint  string
	publisher string // Message.Publisher
	live      liveness
	withdrawn bool
	cancel    context.CancelFunc
	// drop ends the current connection (nil between connections): a
	// publisher that timed out is dialed again rather than left on a
	// connection TCP may keep half-open for a long time.
	drop context.CancelFunc
}

// poll lists the channel's publishers (at once when now is set, then every
// PollInterval) and sends each listing to the actor.
func (r *subRun) poll(send func(any), now bool) {
	s := r.s
	for now || sleepCtx(r.ctx, s.cfg.PollInterval) {
		now = false
		ctx, cancel := context.WithTimeout(r.ctx, max(s.cfg.PollInterval, time.Second))
		pubs, err := s.cfg.Store.ListPublishers(ctx, s.cfg.Channel)
		cancel()
		send(subListed{run: r, pubs: pubs, err: err})
	}
}

// apply reconciles the entries with the listed publishers of the channel:
// one entry per (RID, generation); unlisted entries become withdrawn.
func (r *subRun) apply(pubs []location.Publisher) {
	s := r.s
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
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.entries {
		_, listed := want[k]
		e.withdrawn = !listed
	}
	for k, p := range want {
		if _, ok := r.entries[k]; !ok {
			r.addLocked(k, p.Endpoint, p.RID)
		}
	}
}

// addLocked creates an entry and starts its connection goroutine.
func (r *subRun) addLocked(key, endpoint, publisher string) {
	ctx, cancel := context.WithCancel(r.ctx)
	e := &entry{key: key, endpoint: endpoint, publisher: publisher, live: newLiveness(r.s.now()), cancel: cancel}
	if !r.s.group.Go(func() { r.runConn(ctx, e) }) {
		cancel()
		return
	}
	r.entries[key] = e
	r.s.log.Debug().Str("peer", key).Str("endpoint", endpoint).Msg("fanout publisher added")
}

// checkLiveness times out silent publishers, each against its own clock,
// and drops withdrawn publishers that stayed TimedOut for ReceiveTimeout.
func (r *subRun) checkLiveness() {
	s := r.s
	now := s.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.entries {
		if e.live.check(now, s.cfg.ReceiveTimeout) {
			s.log.Warn().Str("peer", k).Msg("fanout publisher timed out; dialing again")
			if e.drop != nil {
				e.drop()
			}
		}
		if e.withdrawn && e.live.expired(now, s.cfg.ReceiveTimeout) {
			e.cancel()
			delete(r.entries, k)
			s.log.Debug().Str("peer", k).Msg("fanout publisher removed")
		}
	}
}

// heard records activity of e.
func (r *subRun) heard(e *entry) {
	now := r.s.now()
	r.mu.Lock()
	e.live.heard(now)
	r.mu.Unlock()
}

func (r *subRun) isWithdrawn(e *entry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.withdrawn
}

// runConn keeps one SUB socket connected to e's endpoint until ctx ends,
// replacing the socket after every lost connection.
func (r *subRun) runConn(ctx context.Context, e *entry) {
	s := r.s
	ep, _ := zguard.Endpoint(e.endpoint) // checked before the entry was made
	log := s.log.With().Str("peer", e.key).Logger()
	backoff := reconnectMin
	for ctx.Err() == nil {
		cctx, drop := context.WithCancel(ctx)
		r.mu.Lock()
		e.drop = drop
		r.mu.Unlock()
		sock := zmq4.NewSub(zguard.WithConfig(cctx, s.gcfg),
			zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(s.gcfg.HandshakeTimeout))
		for _, t := range s.cfg.Topics {
			_ = sock.SetOption(zmq4.OptionSubscribe, t)
		}
		_ = sock.SetOption(zmq4.OptionSubscribe, heartbeatTopic)
		if err := sock.Dial(ep); err != nil {
			_ = sock.Close()
			drop()
			log.Debug().Err(err).Msg("fanout dial failed")
			if !sleepCtx(ctx, jitter(backoff)) {
				return
			}
			backoff = min(2*backoff, reconnectMax)
			continue
		}
		backoff = reconnectMin
		log.Debug().Msg("fanout connected")
		stop := context.AfterFunc(cctx, func() { _ = sock.Close() }) // a drop ends Recv
		err := r.receive(sock, e)
		stop()
		_ = sock.Close()
		drop()
		if ctx.Err() == nil {
			log.Debug().Err(err).Msg("fanout connection lost")
		}
		// Another publisher answered at this endpoint (the one this entry
		// was made for is gone and the port was reused), or the entry's
		// descriptor was withdrawn: do not redial; the entry times out and
		// is removed, and the new publisher gets its own entry.
		if errors.Is(err, errWrongPublisher) || r.isWithdrawn(e) {
			return
		}
	}
}

// errWrongPublisher ends a connection whose heartbeats name another
// publisher lifecycle than the entry it was dialed for.
var errWrongPublisher = errors.New("zlink: fanout: another publisher answered at this endpoint")

// receive reads messages until the connection is lost or ctx ends. In
// automatic mode the publisher must prove it is the entry's lifecycle: its
// heartbeat carries "rid/generation"; until the first matching heartbeat
// of a connection nothing counts as heard and nothing is delivered, and a
// heartbeat naming another lifecycle ends the connection.
func (r *subRun) receive(sock zmq4.Socket, e *entry) error {
	s := r.s
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
		r.heard(e)
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
