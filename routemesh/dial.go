package routemesh

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
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
	ep := in.cfg.Endpoint
	ok := n.goTracked(func() {
		conn, err := n.tr.Dial(n.ctx, ep, id)
		// The pipe's fields belong to the mesh actor: the connection
		// travels in the message and is attached (or closed) there.
		if terr := n.mesh().TellControl(&dialDone{in: in, p: p, conn: conn, err: err}); terr != nil && conn != nil {
			_ = conn.Close()
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
		if msg.conn != nil {
			_ = msg.conn.Close()
		}
		if in.p == p {
			in.p = nil
		}
		if !in.removed {
			m.retry(in, msg.err)
		}
		return
	}
	p.conn = msg.conn
	n := m.n
	p.w = newWriter(n.cfg.Socket.SendHWM, p.conn.Send, func(err error) {
		_ = n.mesh().TellControl(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", zerr.ErrPeerLost, err)})
	})
	p.w.closer = func() { _ = p.conn.Close() }
	if ts, ok := p.conn.(transport.TrySender); ok {
		p.w.try = ts.TrySend
	}
	m.pipes[p.id] = p
	n.goWriter(p.w)
	n.goTracked(func() { n.readConn(p) })
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
	time.AfterFunc(jitter(backoff), func() { _ = ref.TellControl(&redial{in: in}) })
}
