package fault

import (
	"net"
	"strings"
	"sync"
	"time"
)

// Mode is what a Proxy does with the bytes of one direction.
type Mode uint8

const (
	// Pass forwards bytes.
	Pass Mode = 1 + iota
	// Hold stops reading and forwarding: bytes wait (in the proxy and in
	// the kernel's buffers, so a sender that keeps writing blocks) and are
	// delivered, in order, when the direction passes again — what TCP's
	// retransmission does across a partition that heals. A connection
	// closed or Reset meanwhile loses them, as a broken connection would.
	Hold
	// Drop reads and discards bytes (the connection stays open). No
	// network does this inside a live TCP stream: the receiver then
	// misparses what follows. Only for tests that want exactly that.
	Drop
)

// Proxy forwards every accepted connection to a target. Its faults apply
// to open and new connections alike until changed. Safe for concurrent
// use.
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	up       Mode // client → target
	down     Mode // target → client
	delay    time.Duration
	rate     int           // bytes per second per direction; 0: unlimited
	changed  chan struct{} // closed (and replaced) on every change of mode
	pairs    map[*pair]struct{}
	accepted int
	done     bool
	wg       sync.WaitGroup
}

// pair is one proxied connection: the accepted side and the dialled one.
type pair struct {
	a, b   net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *pair) close() {
	c.once.Do(func() {
		_ = c.a.Close()
		_ = c.b.Close()
		close(c.closed)
	})
}

// New starts a proxy on a free loopback port in front of target
// ("tcp://host:port" or "host:port"). Close stops it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: strings.TrimPrefix(target, "tcp://"), up: Pass, down: Pass,
		changed: make(chan struct{}), pairs: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Endpoint is where to dial the target through the proxy.
func (p *Proxy) Endpoint() string { return "tcp://" + p.ln.Addr().String() }

// Addr is Endpoint without the scheme (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Partition holds both directions until Heal.
func (p *Proxy) Partition() { p.Set(Hold, Hold) }

// CutUp holds only client → target (the target stops hearing the
// client; the client still hears the target).
func (p *Proxy) CutUp() { p.Set(Hold, Pass) }

// CutDown holds only target → client.
func (p *Proxy) CutDown() { p.Set(Pass, Hold) }

// Heal passes both directions again; held bytes are delivered.
func (p *Proxy) Heal() { p.Set(Pass, Pass) }

// Set gives each direction its mode: up is client → target, down is
// target → client.
func (p *Proxy) Set(up, down Mode) {
	p.mu.Lock()
	p.up, p.down = up, down
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// Delay holds every chunk of bytes for d before forwarding it (0: none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Throttle limits each direction of each connection to bytesPerSecond
// (0: unlimited).
func (p *Proxy) Throttle(bytesPerSecond int) {
	p.mu.Lock()
	p.rate = max(bytesPerSecond, 0)
	p.mu.Unlock()
}

// Reset closes every open connection (both sides see it end; held bytes
// are lost).
func (p *Proxy) Reset() {
	p.mu.Lock()
	pairs := make([]*pair, 0, len(p.pairs))
	for c := range p.pairs {
		pairs = append(pairs, c)
	}
	p.mu.Unlock()
	for _, c := range pairs {
		c.close()
	}
}

// Conns is the number of connections open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pairs)
}

// Accepted is the number of connections accepted since New.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

type setting struct {
	mode    Mode
	delay   time.Duration
	rate    int
	changed <-chan struct{}
}

func (p *Proxy) setting(up bool) setting {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := setting{mode: p.down, delay: p.delay, rate: p.rate, changed: p.changed}
	if up {
		s.mode = p.up
	}
	return s
}

// awaitNotHeld waits while the direction is held. It returns the setting
// to apply, or false when the connection ended meanwhile.
func (p *Proxy) awaitNotHeld(c *pair, up bool) (setting, bool) {
	for {
		s := p.setting(up)
		if s.mode != Hold {
			return s, true
		}
		select {
		case <-s.changed:
		case <-c.closed:
			return s, false
		}
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		a, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			_ = a.Close()
			continue
		}
		c := &pair{a: a, b: b, closed: make(chan struct{})}
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			c.close()
			return
		}
		p.pairs[c] = struct{}{}
		p.accepted++
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, a, b, true)
		go p.pipe(c, b, a, false)
	}
}

// pipe copies from → to under the current setting of its direction; when
// either side ends, both do.
func (p *Proxy) pipe(c *pair, from, to net.Conn, up bool) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.pairs, c)
		p.mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		// Held: read nothing, so the sender's writes back up as they
		// would behind a partition.
		s, ok := p.awaitNotHeld(c, up)
		if !ok {
			return
		}
		chunk := buf
		if s.rate > 0 {
			chunk = buf[:min(len(buf), max(s.rate/20, 1))] // ~20 chunks a second
		}
		n, err := from.Read(chunk)
		if n > 0 {
			// Held after the read: these bytes wait too.
			if s, ok = p.awaitNotHeld(c, up); !ok {
				return
			}
			if s.mode == Drop {
				continue
			}
			if s.delay > 0 {
				time.Sleep(s.delay) // this direction's bytes wait; order is kept
			}
			if !forward(to, chunk[:n], s.rate) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward writes b to w, at most rate bytes per second when rate > 0
// (each piece waits its share of the second before it goes).
func forward(w net.Conn, b []byte, rate int) bool {
	for len(b) > 0 {
		n := len(b)
		if rate > 0 {
			n = min(n, max(rate/20, 1))
			time.Sleep(time.Duration(n) * time.Second / time.Duration(rate))
		}
		if _, err := w.Write(b[:n]); err != nil {
			return false
		}
		b = b[n:]
	}
	return true
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. Idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Reset()
	p.wg.Wait()
}
