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
	// Drop reads and discards bytes (the connection stays open).
	Drop
)

// Proxy forwards every accepted connection to a target. Its faults apply
// to open and new connections alike until changed. Safe for concurrent
// use.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	up    Mode // client → target
	down  Mode // target → client
	delay time.Duration
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
}

// New starts a proxy on a free loopback port in front of target
// ("tcp://host:port" or "host:port"). Close stops it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: strings.TrimPrefix(target, "tcp://"), up: Pass, down: Pass, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Endpoint is where to dial the target through the proxy.
func (p *Proxy) Endpoint() string { return "tcp://" + p.ln.Addr().String() }

// Partition black-holes both directions.
func (p *Proxy) Partition() { p.set(Drop, Drop) }

// CutUp black-holes only client → target (the target stops hearing the
// client; the client still hears the target).
func (p *Proxy) CutUp() { p.set(Drop, Pass) }

// CutDown black-holes only target → client.
func (p *Proxy) CutDown() { p.set(Pass, Drop) }

// Heal passes both directions again.
func (p *Proxy) Heal() { p.set(Pass, Pass) }

// Delay holds every chunk of bytes for d before forwarding it (0: none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Reset closes every open connection (both sides see it end).
func (p *Proxy) Reset() {
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) set(up, down Mode) {
	p.mu.Lock()
	p.up, p.down = up, down
	p.mu.Unlock()
}

func (p *Proxy) mode(up bool) (Mode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if up {
		return p.up, p.delay
	}
	return p.down, p.delay
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
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			_ = a.Close()
			_ = b.Close()
			return
		}
		p.conns[a], p.conns[b] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(a, b, true)
		go p.pipe(b, a, false)
	}
}

// pipe copies from → to under the current mode of its direction; when
// either side ends, both do.
func (p *Proxy) pipe(from, to net.Conn, up bool) {
	defer p.wg.Done()
	defer func() {
		_ = from.Close()
		_ = to.Close()
		p.mu.Lock()
		delete(p.conns, from)
		delete(p.conns, to)
		p.mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if err != nil {
			return
		}
		mode, delay := p.mode(up)
		if mode == Drop {
			continue
		}
		if delay > 0 {
			time.Sleep(delay) // this direction's bytes wait; order is kept
		}
		if _, err := to.Write(buf[:n]); err != nil {
			return
		}
	}
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
