package spot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// Kind declares one Spot kind: how to make a Spot's state and which
// packets its handlers answer. An Object Server hosts the kinds passed to
// its Enable (servers of one mesh may host different kinds; each kind's
// Spots are placed only on its hosts). Build it with NewKind and
// On/OnSend, then pass it to Enable.
// A refused setting (a nil handler, a packet registered twice) is kept and
// Enable returns it.
type Kind[S any] struct{ reg *kindReg }

// Registration is what Enable takes: a *Kind of any state type.
type Registration interface{ registration() *kindReg }

func (k *Kind[S]) registration() *kindReg { return k.reg }

// Name returns the kind's name.
func (k *Kind[S]) Name() string { return k.reg.name }

type requestFn func(c *Context, state any, payload []byte) ([]byte, error)
type sendFn func(c *Context, state any, payload []byte)

type kindReg struct {
	name         string
	newState     func(id string) any
	requests     map[string]requestFn
	sends        map[string]sendFn
	onActivate   func(c *Context, state any) error
	onDeactivate func(c *Context, state any)
	onReply      func(c *Context, state any, r *Reply) // dispatches to the two below
	rawReply     func(c *Context, state any, r *Reply)
	typedReplies map[string]func(c *Context, state any, r *Reply)
	persist      *Persistence
	encode       func(state any) ([]byte, error)
	decode       func(version uint32, data []byte) (any, error)
	upgrade      func(version uint32, data []byte) (any, error)
	assign       func(dst, src any) // *dst = *src for the kind's state type (persistent kinds)
	idle         time.Duration
	reentrant    bool
	timerUse     bool // a timer turn counts as use for idle deactivation
	onReminder   func(c *Context, state any, r Reminder) error
	maxMessages  int64
	maxBytes     int64
	err          error
}

// Defaults of a kind.
const (
	// DefaultIdleTimeout: a Spot without a message for this long is
	// deactivated.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultMailboxMessages and DefaultMailboxBytes bound one Spot's
	// mailbox; a full mailbox ends the call with ErrBusy.
	DefaultMailboxMessages = 1024
	DefaultMailboxBytes    = 4 << 20
)

// NewKind declares the kind name; newState makes a fresh state for the
// Spot id on every activation. A name with ':' or '/' or longer than 128
// bytes is refused at Enable.
func NewKind[S any](name string, newState func(id string) *S) *Kind[S] {
	k := &Kind[S]{reg: &kindReg{name: name, requests: map[string]requestFn{}, sends: map[string]sendFn{},
		idle: DefaultIdleTimeout, maxMessages: DefaultMailboxMessages, maxBytes: DefaultMailboxBytes}}
	switch {
	case name == "" || len(name) > 128 || strings.ContainsAny(name, ":/{} "):
		k.refuse("kind name %q: empty, too long, or with ':', '/', '{', '}' or a space", name)
	case newState == nil:
		k.refuse("kind %s: nil state constructor", name)
	default:
		k.reg.newState = func(id string) any { return newState(id) }
	}
	return k
}

func (k *Kind[S]) refuse(format string, args ...any) {
	if k.reg.err == nil {
		k.reg.err = fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
}

func (k *Kind[S]) checkPacket(name string, nilHandler bool) bool {
	_, req := k.reg.requests[name]
	_, snd := k.reg.sends[name]
	switch {
	case name == "":
		k.refuse("kind %s: empty packet name", k.reg.name)
	case nilHandler:
		k.refuse("kind %s: nil handler for packet %s", k.reg.name, name)
	case req || snd:
		k.refuse("kind %s: packet %s registered twice", k.reg.name, name)
	default:
		return true
	}
	return false
}

// On registers the request handler of packet p. It runs on the Spot's
// actor, one message at a time, with the Spot's state.
func On[S, Req, Resp any](k *Kind[S], p wire.Packet[Req, Resp], h func(c *Context, s *S, req Req) (Resp, error)) *Kind[S] {
	if !k.checkPacket(p.Name(), h == nil) {
		return k
	}
	k.reg.requests[p.Name()] = func(c *Context, state any, payload []byte) ([]byte, error) {
		req, err := p.DecodeRequest(payload)
		if err != nil {
			return nil, err
		}
		resp, err := h(c, state.(*S), req)
		if err != nil {
			return nil, err
		}
		return p.EncodeReply(resp)
	}
	return k
}

// OnSend registers the one-way handler of packet p.
func OnSend[S, Msg, Unused any](k *Kind[S], p wire.Packet[Msg, Unused], h func(c *Context, s *S, msg Msg)) *Kind[S] {
	if !k.checkPacket(p.Name(), h == nil) {
		return k
	}
	k.reg.sends[p.Name()] = func(c *Context, state any, payload []byte) {
		msg, err := p.DecodeRequest(payload)
		if err != nil {
			return
		}
		h(c, state.(*S), msg)
	}
	return k
}

// OnRaw registers a request handler on raw bytes (tools and bridges; the
// typed On is the usual form).
func (k *Kind[S]) OnRaw(packet string, h func(c *Context, s *S, payload []byte) ([]byte, error)) *Kind[S] {
	if k.checkPacket(packet, h == nil) {
		k.reg.requests[packet] = func(c *Context, state any, payload []byte) ([]byte, error) { return h(c, state.(*S), payload) }
	}
	return k
}

// OnActivate sets the hook run in the Spot's first turn of every
// activation (also after a restart). An error ends the activation: the
// calls waiting for it end with ErrHandler.
func (k *Kind[S]) OnActivate(f func(c *Context, s *S) error) *Kind[S] {
	if f == nil {
		k.refuse("kind %s: nil OnActivate", k.reg.name)
		return k
	}
	k.reg.onActivate = func(c *Context, state any) error { return f(c, state.(*S)) }
	return k
}

// OnDeactivate sets the hook run in the Spot's last turn when it is
// deactivated (idle, drain, shutdown). It is not run when the owner is
// fenced or crashes.
func (k *Kind[S]) OnDeactivate(f func(c *Context, s *S)) *Kind[S] {
	if f == nil {
		k.refuse("kind %s: nil OnDeactivate", k.reg.name)
		return k
	}
	k.reg.onDeactivate = func(c *Context, state any) { f(c, state.(*S)) }
	return k
}

// SetIdleTimeout sets how long a Spot may go without a message before it
// is deactivated (default DefaultIdleTimeout; at least 10 ms).
func (k *Kind[S]) SetIdleTimeout(d time.Duration) *Kind[S] {
	if d < 10*time.Millisecond {
		k.refuse("kind %s: idle timeout %v below 10ms", k.reg.name, d)
		return k
	}
	k.reg.idle = d
	return k
}

// SetReentrant lets a Spot of this kind take a call that belongs to a call
// chain one of its own turns is waiting on (a → b → a): the call runs at
// once, interleaved with the waiting turn at the point where it called
// out, instead of ending with ErrCycle. Other calls still wait for the
// turn to end. Handlers of a reentrant kind must expect the state to
// change across their own outbound calls.
func (k *Kind[S]) SetReentrant() *Kind[S] {
	k.reg.reentrant = true
	return k
}

// SetTimersKeepActive makes a timer's firing count as use of the Spot, so
// a Spot with a repeating timer is never deactivated for idleness. By
// default only messages count: an idle Spot's timers stop with it.
func (k *Kind[S]) SetTimersKeepActive() *Kind[S] {
	k.reg.timerUse = true
	return k
}

// SetMailbox bounds each Spot's mailbox (messages ≥ 1, bytes ≥ 1 KiB).
func (k *Kind[S]) SetMailbox(messages int, bytes int64) *Kind[S] {
	if messages < 1 || bytes < 1024 {
		k.refuse("kind %s: mailbox %d messages, %d bytes", k.reg.name, messages, bytes)
		return k
	}
	k.reg.maxMessages, k.reg.maxBytes = int64(messages), bytes
	return k
}

// Context is what a Spot handler sees: the caller's deadline (it is a
// context.Context), the Spot's identity and its node. Pass it as the ctx
// of the calls a handler makes (spot.Call, the node's Call...): Spot calls
// made with it carry the call chain, so a cycle ends at once with ErrCycle.
type Context struct {
	context.Context
	// Kind and ID name the Spot.
	Kind, ID string
	// Epoch is the activation's ownership epoch (it grows with every new
	// owner).
	Epoch uint64
	// From is the calling node's RID ("" in hooks and timer turns).
	From string
	// Source says what started the turn: SourceRequest, SourceSend,
	// SourceReply or SourceTimer ("" in the activation hooks).
	Source string
	// Node is the MeshNode hosting the Spot.
	Node *routemesh.Node

	act   *activation
	rt    *runtime
	ks    *kindState
	chain []link    // the chain this turn was called with
	turn  uint64    // the turn in a reentrant kind's turn stack (0: other kinds)
	req   *delivery // the request this turn runs (nil in other turns): Defer
}

// What started a turn (Context.Source).
const (
	SourceRequest = "request"
	SourceSend    = "send"
	SourceReply   = "reply"
	SourceTimer   = "timer"
)

type chainKey struct{}

// Value answers the call-chain key with the handler's Context, so calls
// made with a derived context still carry the chain.
func (c *Context) Value(key any) any {
	if _, ok := key.(chainKey); ok {
		return c
	}
	return c.Context.Value(key)
}
