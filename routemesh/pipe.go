package routemesh

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/handshake"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// pipeState is where a pipe is in its life.
type pipeState uint32

const (
	pipeHandshake pipeState = 1 + iota // frames go to the mesh actor
	pipeReady                          // frames are dispatched by the reader
	pipeClosed                         // frames are dropped
)

// errSlowPeer closes a pipe whose reply/control lane overflowed: the peer
// reads so slowly that it can no longer receive answers.
var errSlowPeer = errors.New("zlink: peer too slow to take its replies")

// outItem is one thing a writer sends: an envelope (batched) or a raw
// handshake frame (sent alone, in order).
type outItem struct {
	env   wire.Envelope
	frame []byte
}

// pipe is one physical connection to a peer: an outbound connection we
// dialed (a DEALER of its own), or an inbound identity on our listener (the
// ROUTER). Its identity (the dialer's socket
// identity) is unique: RID + generation + a nonce, so duplicate pipes between
// two nodes never share an identity.
type pipe struct {
	// dmu guards routed and wantDisconnect (a leaf): an inbound pipe's
	// connection is disconnected only once its identity no longer routes
	// to it (handshake.go, inboundGone).
	dmu            sync.Mutex
	routed         bool
	wantDisconnect bool
	id             string
	outbound       bool
	intent         *intent        // outbound only
	conn           transport.Conn // outbound only
	node           *Node
	w              *writer
	state          atomic.Uint32 // pipeState
	lastRead       atomic.Int64  // unix nanos of the last frame read
	live           *pipeLive     // liveness; set before the pipe is ready

	// set by the mesh actor during the handshake, read-only once ready
	remote     wire.Identity
	hello      *wire.Hello
	welcome    *wire.Welcome
	myNonce    [16]byte
	theirNonce [16]byte
	started    time.Time
	link       *link
	hs         *handshake.Machine // the handshake; mesh actor only
	hsTimer    bool               // a handshake timeout is armed

	closeOnce sync.Once
	closed    chan struct{}
}

func (p *pipe) getState() pipeState { return pipeState(p.state.Load()) }

// sendFrame queues a raw frame (handshake) behind whatever is queued.
func (p *pipe) sendFrame(f *wire.Frame) error {
	b, err := wire.AppendFrame(nil, f)
	if err != nil {
		return err
	}
	return p.w.control(outItem{frame: b})
}

// close stops the pipe's writer and (outbound) its socket. Idempotent.
func (p *pipe) close() {
	p.closeOnce.Do(func() {
		p.state.Store(uint32(pipeClosed))
		close(p.closed)
		switch {
		case p.w != nil:
			p.w.stop() // the writer closes the connection after its last frame
		case p.conn != nil:
			_ = p.conn.Close()
		}
	})
}

// inboundGone: the identity of inbound pipe p no longer routes to it (the
// mesh actor dropped it from n.inbnd); a disconnect its writer's end put
// off happens now.
func (p *pipe) inboundGone(n *Node) {
	p.dmu.Lock()
	p.routed = false
	want := p.wantDisconnect
	p.dmu.Unlock()
	if want {
		n.ln.Disconnect(p.id)
	}
}

// ident is the pipe's socket identity, the dialer's: an outbound pipe's
// id, the identity part of an inbound pipe's connection key. Both sides
// of a connection show the same one.
func (p *pipe) ident() string {
	if p.outbound {
		return p.id
	}
	return transport.KeyIdentity(p.id)
}
