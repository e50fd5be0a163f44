package wire

import (
	"errors"
	"math"
	"strconv"
)

// Kind says what an Envelope is.
type Kind uint8

// Envelope kinds. Values are part of the protocol: append only.
const (
	KindRequest Kind = 1 + iota
	KindSend
	KindReply
	KindError
	KindHeartbeat
	KindWeightUpdate
	KindDrain
	KindGoodbye

	kindEnd
)

var kindNames = [...]string{
	KindRequest:      "request",
	KindSend:         "send",
	KindReply:        "reply",
	KindError:        "error",
	KindHeartbeat:    "heartbeat",
	KindWeightUpdate: "weight_update",
	KindDrain:        "drain",
	KindGoodbye:      "goodbye",
}

func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (k Kind) valid() bool { return k >= 1 && k < kindEnd }

// Envelope is one message inside a Batch frame. Which fields a kind uses is
// listed on each field; the others stay zero. (The small fields come first
// and together: envelopes are copied into every admitted request.)
type Envelope struct {
	Kind                 Kind
	Draining             bool              // Heartbeat/Drain
	Code                 Code              // Error
	TimeoutMs            uint32            // Request: remaining time budget at send
	Corr                 uint64            // correlation id: Request/Reply/Error
	Channel              string            // "" = node direct
	Packet               string            // packet name
	Payload              []byte            // Request/Send/Reply: app payload; Error: message text
	Generation, Revision uint64            // Heartbeat, WeightUpdate
	Servers              map[string]uint16 // WeightUpdate: full Server set with weights
	Headroom             map[string]uint32 // Heartbeat/Reply: per-channel admission headroom (free slots); nil = unknown
	Seq                  uint64            // Heartbeat sequence
	// Trace is the caller's trace context (Request/Send), opaque to wire:
	// at most MaxTraceLen bytes, written as bin; "" = none, and costs no
	// bytes.
	Trace string
}

// MaxTraceLen bounds Envelope.Trace; a longer one is a protocol error.
const MaxTraceLen = 64

// Envelope wire layout: an array of up to envelopeFields values in this
// order; trailing zero values are left out, so a Request costs no bytes for
// the heartbeat fields:
//
//	[kind, corr, channel, packet, timeoutMs, payload, code, headroom,
//	 generation, revision, servers, draining, seq, trace]
//
// A nil Payload/Headroom/Servers is msgpack nil (and counts as zero); an
// empty non-nil one is an empty bin/map, so the difference survives.
const envelopeFields = 14

// Size returns an upper bound of e's encoded size in bytes, computed without
// encoding. Owners use it for byte budgets and senders for batch limits.
func (e *Envelope) Size() int {
	// Fixed part: array header 1, kind 1, corr 9, channel/packet/payload
	// headers 5 each, timeout 5, code 3, headroom/servers headers 5 each,
	// generation 9, revision 9, draining 1, seq 9, trace header 5.
	n := 77 + len(e.Channel) + len(e.Packet) + len(e.Payload) + len(e.Trace)
	// Most envelopes (requests, replies) carry neither map: no map
	// iteration for them, and Size stays small enough to inline.
	if len(e.Headroom) > 0 || len(e.Servers) > 0 {
		n += e.mapsSize()
	}
	return n
}

// mapsSize is Size's part for the Headroom and Servers entries.
//
//go:noinline
func (e *Envelope) mapsSize() int {
	n := 0
	for k := range e.Headroom {
		n += 10 + len(k)
	}
	for k := range e.Servers {
		n += 8 + len(k)
	}
	return n
}

// fieldCount returns how many leading fields must be written.
func (e *Envelope) fieldCount() int {
	switch {
	case e.Trace != "":
		return 14
	case e.Seq != 0:
		return 13
	case e.Draining:
		return 12
	case e.Servers != nil:
		return 11
	case e.Revision != 0:
		return 10
	case e.Generation != 0:
		return 9
	case e.Headroom != nil:
		return 8
	case e.Code != 0:
		return 7
	case e.Payload != nil:
		return 6
	case e.TimeoutMs != 0:
		return 5
	case e.Packet != "":
		return 4
	case e.Channel != "":
		return 3
	case e.Corr != 0:
		return 2
	}
	return 1
}

func (e *encoder) envelope(v *Envelope) {
	n := v.fieldCount()
	e.arrayHeader(n)
	e.uint(uint64(v.Kind))
	if n < 2 {
		return
	}
	e.uint(v.Corr)
	if n < 3 {
		return
	}
	e.string(v.Channel)
	if n < 4 {
		return
	}
	e.string(v.Packet)
	if n < 5 {
		return
	}
	e.uint(uint64(v.TimeoutMs))
	if n < 6 {
		return
	}
	e.bin(v.Payload)
	if n < 7 {
		return
	}
	e.uint(uint64(v.Code))
	if n < 8 {
		return
	}
	e.headroom(v.Headroom)
	if n < 9 {
		return
	}
	e.uint(v.Generation)
	if n < 10 {
		return
	}
	e.uint(v.Revision)
	if n < 11 {
		return
	}
	e.weights(v.Servers)
	if n < 12 {
		return
	}
	e.bool(v.Draining)
	if n < 13 {
		return
	}
	e.uint(v.Seq)
	if n < 14 {
		return
	}
	e.binString(v.Trace)
}

// batch decodes the envelopes of a Batch frame, into buf's array when it
// has room. Channel and packet names repeated from the previous envelope
// share one string.
func (r *reader) batch(buf []Envelope) []Envelope {
	// Each envelope is at least two bytes (a fixarray header and a kind).
	n := r.ArrayHeader()
	n = r.Count(uint64(n), 2)
	if n == 0 {
		return nil
	}
	var out []Envelope
	if cap(buf) >= n {
		out = buf[:n]
		clear(out)
	} else {
		out = make([]Envelope, n)
	}
	var lastChannel, lastPacket string
	for i := 0; i < n && r.Err == nil; i++ {
		r.envelope(&out[i], &lastChannel, &lastPacket)
	}
	return out
}

func (r *reader) envelope(v *Envelope, lastChannel, lastPacket *string) {
	start := r.Off
	n := r.ArrayHeader()
	if r.Err != nil {
		return
	}
	if n < 1 || n > envelopeFields {
		r.Fail("envelope: wrong field count")
		return
	}
	v.Kind = Kind(r.Uint(math.MaxUint8))
	if r.Err == nil && !v.Kind.valid() {
		r.Off = start
		r.Fail("envelope: invalid kind")
		return
	}
	if n < 2 {
		return
	}
	v.Corr = r.Uint(math.MaxUint64)
	if n < 3 {
		return
	}
	v.Channel = r.interned(lastChannel)
	if n < 4 {
		return
	}
	v.Packet = r.interned(lastPacket)
	if n < 5 {
		return
	}
	v.TimeoutMs = uint32(r.Uint(math.MaxUint32))
	if n < 6 {
		return
	}
	v.Payload = r.BinBytes()
	if n < 7 {
		return
	}
	v.Code = Code(r.Uint(math.MaxUint16))
	if n < 8 {
		return
	}
	if v.Kind == KindHeartbeat && r.maps != nil {
		v.Headroom = r.heartbeatHeadroom()
	} else {
		v.Headroom = r.headroom()
	}
	if n < 9 {
		return
	}
	v.Generation = r.Uint(math.MaxUint64)
	if n < 10 {
		return
	}
	v.Revision = r.Uint(math.MaxUint64)
	if n < 11 {
		return
	}
	if v.Kind == KindHeartbeat && r.maps != nil {
		v.Servers = r.heartbeatServers()
	} else {
		v.Servers = r.weights()
	}
	if n < 12 {
		return
	}
	v.Draining = r.Bool()
	if n < 13 {
		return
	}
	v.Seq = r.Uint(math.MaxUint64)
	if n < 14 {
		return
	}
	if p := r.BinBytes(); len(p) > MaxTraceLen {
		r.Fail("envelope: trace context too long")
	} else if len(p) > 0 {
		v.Trace = string(p)
	}
}

// interned reads a string, reusing *last when the bytes are equal.
func (r *reader) interned(last *string) string {
	p := r.StrBytes()
	if string(p) == *last {
		return *last
	}
	s := string(p)
	*last = s
	return s
}

// ErrorEnvelope builds the Error envelope that answers request corr with
// err: the code is CodeOf(err) and the payload the error text (a relayed
// *RemoteError keeps its original message).
func ErrorEnvelope(corr uint64, err error) Envelope {
	msg := ""
	if re, ok := errors.AsType[*RemoteError](err); ok {
		msg = re.Message
	} else if err != nil {
		msg = err.Error()
	}
	return Envelope{Kind: KindError, Corr: corr, Code: CodeOf(err), Payload: []byte(msg)}
}

// Err returns the error an Error envelope carries, rebuilt with ErrorOf so
// errors.Is matches the sender's sentinel; nil for every other kind.
func (e *Envelope) Err() error {
	if e.Kind != KindError {
		return nil
	}
	return ErrorOf(e.Code, string(e.Payload))
}
