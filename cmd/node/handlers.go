package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// Built-in packet names every --server channel answers.
const (
	packetEcho  = "echo"  // request: reply "rid=<serving rid> data=<payload>"
	packetSleep = "sleep" // request: payload is a duration (e.g. "200ms"); sleeps, then replies like echo
	packetSink  = "sink"  // one-way: counted per channel
)

// maxSleep bounds the sleep packet so a typo cannot pin a handler.
const maxSleep = time.Minute

// echoReply is the reply format of echo and sleep.
func echoReply(rid string, payload []byte) []byte {
	return append([]byte("rid="+rid+" data="), payload...)
}

// parseEchoReply splits an echo reply into the serving RID and the data.
func parseEchoReply(b []byte) (rid, data string, ok bool) {
	s, found := strings.CutPrefix(string(b), "rid=")
	if !found {
		return "", "", false
	}
	rid, data, ok = strings.Cut(s, " data=")
	return rid, data, ok
}

// builtins are the handlers of one mesh. The RID is known only after the
// MeshNode starts (automatic topology picks it), so handlers wait for it.
type builtins struct {
	ready chan struct{}
	rid   atomic.Pointer[string]

	mu     sync.Mutex // guards the maps (counters inside are atomics)
	sinks  map[string]*atomic.Uint64
	echoes map[string]*atomic.Uint64
}

func newBuiltins() *builtins {
	return &builtins{ready: make(chan struct{}), sinks: map[string]*atomic.Uint64{}, echoes: map[string]*atomic.Uint64{}}
}

// setRID publishes the node's RID to the handlers. Call once.
func (b *builtins) setRID(rid string) {
	b.rid.Store(&rid)
	close(b.ready)
}

func (b *builtins) waitRID(ctx context.Context) (string, error) {
	select {
	case <-b.ready:
		return *b.rid.Load(), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (b *builtins) counter(m map[string]*atomic.Uint64, channel string) *atomic.Uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := m[channel]
	if c == nil {
		c = new(atomic.Uint64)
		m[channel] = c
	}
	return c
}

// register installs echo, sleep and sink on a Server channel.
func (b *builtins) register(sb *routemesh.ServerBuilder, channel string) {
	echoes := b.counter(b.echoes, channel)
	sinks := b.counter(b.sinks, channel)
	sb.HandleRequest(packetEcho, func(c *routemesh.Context, p []byte) ([]byte, error) {
		rid, err := b.waitRID(c)
		if err != nil {
			return nil, err
		}
		echoes.Add(1)
		return echoReply(rid, p), nil
	})
	sb.HandleRequest(packetSleep, func(c *routemesh.Context, p []byte) ([]byte, error) {
		d, err := time.ParseDuration(string(p))
		if err != nil || d < 0 || d > maxSleep {
			return nil, fmt.Errorf("sleep: payload %q is not a duration in 0..%s", p, maxSleep)
		}
		rid, err := b.waitRID(c)
		if err != nil {
			return nil, err
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.Done():
			return nil, c.Err()
		}
		echoes.Add(1)
		return echoReply(rid, p), nil
	})
	sb.HandleSend(packetSink, func(*routemesh.Context, []byte) { sinks.Add(1) })
}

// counters returns the built-in counters by name: echo:<channel> and
// sink:<channel>, in name order.
func (b *builtins) counters() map[string]uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]uint64, len(b.sinks)+len(b.echoes))
	for ch, c := range b.echoes {
		out["echo:"+ch] = c.Load()
	}
	for ch, c := range b.sinks {
		out["sink:"+ch] = c.Load()
	}
	return out
}
