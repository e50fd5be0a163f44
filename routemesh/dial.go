package routemesh

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/wire"
)

// jitter returns d scaled by a random factor in [0.5, 1.5).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

func (m *meshActor) dial(in *intent) {
	if m.stopped || in.removed || in.p != nil || in.state == PeerNotRequired {
		return
	}
	if !m.adm.ShouldDial(in.adm) {
		in.state = PeerNotRequired
		return
	}
	if in.rid != "" {
		if l := m.n.load().links[in.rid]; l != nil {
			in.state = PeerReady // satisfied by a connection the peer dialed
			return
		}
	}
	n := m.n
	id := n.rid + "/" + strconv.FormatUint(n.gen, 16) + "/" + ident.Hex(4)
	p := &pipe{id: id, outbound: true, intent: in, node: n, closed: make(chan struct{}), started: time.Now()}
	p.state.Store(uint32(pipeHandshake))
	in.p = p
	if in.state != PeerNotConnected {
		in.state = PeerConnecting
	}
	in.attempts++
	ep, err := zguard.Endpoint(in.cfg.Endpoint)
	if err != nil {
		m.onDialDone(&dialDone{in: in, p: p, err: err})
		return
	}
	gcfg := n.guardConfig()
	ok := n.goTracked(func() {
		d := zmq4.NewDealer(zguard.WithConfig(n.ctx, gcfg), zmq4.WithID(zmq4.SocketIdentity(id)),
			zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(n.cfg.Socket.ReceiveTimeout))
		err := d.Dial(ep)
		var dealer zmq4.Socket
		if err != nil {
			_ = d.Close()
		} else {
			dealer = d
		}
		// The pipe's fields belong to the mesh actor: the socket travels in
		// the message and is attached (or closed) there.
		if terr := n.mesh().Tell(&dialDone{in: in, p: p, dealer: dealer, err: err}); terr != nil && dealer != nil {
			_ = dealer.Close()
		}
	})
	if !ok {
		in.p = nil
	}
}

func (m *meshActor) onDialDone(msg *dialDone) {
	p, in := msg.p, msg.in
	// A dial that is no longer wanted (stopped, intent withdrawn or
	// replaced, pipe already closed) only closes its socket.
	if msg.err != nil || m.stopped || in.removed || in.p != p || p.getState() == pipeClosed {
		if msg.dealer != nil {
			_ = msg.dealer.Close()
		}
		if in.p == p {
			in.p = nil
		}
		if !in.removed {
			m.retry(in, msg.err)
		}
		return
	}
	p.dealer = msg.dealer
	n := m.n
	p.w = newWriter(n.cfg.Socket.SendHWM, func(b []byte) error {
		return p.dealer.Send(zmq4.NewMsg(b))
	}, func(err error) {
		_ = n.mesh().Tell(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", wire.ErrPeerLost, err)})
	})
	p.w.closer = func() { _ = p.dealer.Close() }
	m.pipes[p.id] = p
	n.goWriter(p.w)
	n.goTracked(func() { n.readDealer(p) })
	m.startHandshake(p)
}

// retry schedules the next dial of in with exponential backoff and jitter.
func (m *meshActor) retry(in *intent, err error) {
	if m.stopped || in.removed || in.state == PeerNotRequired || in.waiting {
		return
	}
	if err != nil {
		in.lastErr = err
	}
	if in.state != PeerNotConnected {
		in.state = PeerNotConnected
		in.since = time.Now()
	}
	backoff := 50 * time.Millisecond << min(in.attempts, 7)
	backoff = min(backoff, 5*time.Second)
	in.waiting = true
	ref := m.self
	time.AfterFunc(jitter(backoff), func() { _ = ref.Tell(&redial{in: in}) })
}
