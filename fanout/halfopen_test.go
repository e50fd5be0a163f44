package fanout

import (
	"net"
	"sync"
	"testing"
	"time"
)

// cutProxy forwards TCP connections to a target. cut() makes every
// connection open at that moment a black hole — it stays open and silent,
// as a connection to a host that vanished does — while new connections
// are forwarded normally.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*proxied
	wg     sync.WaitGroup
}

type proxied struct {
	a, b net.Conn
	cut  chan struct{}
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) endpoint() string { return "tcp://" + p.ln.Addr().String() }

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		a, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = a.Close()
			continue
		}
		c := &proxied{a: a, b: b, cut: make(chan struct{})}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, a, b)
		go p.pipe(c, b, a)
	}
}

// pipe copies until the connection is cut (then it swallows what comes)
// or closed.
func (p *cutProxy) pipe(c *proxied, from, to net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if err != nil {
			return
		}
		select {
		case <-c.cut:
			continue // a black hole: read and drop
		default:
		}
		if _, err := to.Write(buf[:n]); err != nil {
			return
		}
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		select {
		case <-c.cut:
		default:
			close(c.cut)
		}
	}
}

func (p *cutProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.a.Close()
		_ = c.b.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// A publisher whose host vanishes leaves a half-open connection that TCP
// keeps for a long time. The subscriber must not wait for TCP: when the
// publisher times out it drops the socket and dials again, so a publisher
// reachable again is Live again at once.
func TestManual_TimedOutPublisherIsRedialed(t *testing.T) {
	pub := startPub(t, PublisherConfig{Channel: "c", HeartbeatInterval: 30 * time.Millisecond})
	proxy := newCutProxy(t, pub.Endpoint()[len("tcp://"):])
	got := &collector{}
	ep := proxy.endpoint()
	sub := startSub(t, SubscriberConfig{Channel: "c", Endpoints: []string{ep}, ReceiveTimeout: 200 * time.Millisecond,
		Handler: got.handle})
	waitUntil(t, "Live", func() bool { st, _ := stateOf(sub, ep); return st.State == StateLive })
	proxy.cut() // the connection goes silent but stays open
	waitUntil(t, "TimedOut", func() bool { st, _ := stateOf(sub, ep); return st.State == StateTimedOut })
	waitUntil(t, "Live again over a new connection", func() bool { st, _ := stateOf(sub, ep); return st.State == StateLive })
	before := len(got.snapshot())
	waitUntil(t, "delivery resumed", func() bool {
		_ = pub.Publish("news", []byte("x"))
		return len(got.snapshot()) > before
	})
}
