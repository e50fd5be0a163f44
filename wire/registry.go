package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zlink-go/zlink/internal/zerr"
)

// Packet is a typed packet name: the request type Req, answered by Resp.
// Application code encodes and decodes through it and never touches bytes.
// The zero Packet has an empty name and cannot be registered.
type Packet[Req, Resp any] struct{ name string }

// NewPacket returns the packet called name.
func NewPacket[Req, Resp any](name string) Packet[Req, Resp] {
	return Packet[Req, Resp]{name: name}
}

// Name returns the packet name carried in Envelope.Packet.
func (p Packet[Req, Resp]) Name() string { return p.name }

// EncodeRequest encodes a request payload (msgpack).
func (p Packet[Req, Resp]) EncodeRequest(v Req) ([]byte, error) { return encodePayload(v) }

// DecodeRequest decodes a request payload; a payload that is not a Req gives
// an error wrapping ErrBadPayload.
func (p Packet[Req, Resp]) DecodeRequest(b []byte) (Req, error) {
	var v Req
	if isEmpty(&v, b) {
		return v, nil
	}
	err := decodePayload(b, &v)
	return v, err
}

// EncodeReply encodes a reply payload (msgpack).
func (p Packet[Req, Resp]) EncodeReply(v Resp) ([]byte, error) { return encodePayload(v) }

// DecodeReply decodes a reply payload; a payload that is not a Resp gives an
// error wrapping ErrBadPayload.
func (p Packet[Req, Resp]) DecodeReply(b []byte) (Resp, error) {
	var v Resp
	if isEmpty(&v, b) {
		return v, nil
	}
	err := decodePayload(b, &v)
	return v, err
}

// PacketInfo describes a registered packet and decodes/encodes its payloads
// without static types (for the dispatch layer, which only has a name).
type PacketInfo struct {
	Name    string
	Request reflect.Type // Req
	Reply   reflect.Type // Resp

	decodeRequest func([]byte) (any, error)
	decodeReply   func([]byte) (any, error)
}

// DecodeRequest decodes a request payload into a new Req, returned as any.
func (pi PacketInfo) DecodeRequest(b []byte) (any, error) { return pi.decodeRequest(b) }

// DecodeReply decodes a reply payload into a new Resp, returned as any.
func (pi PacketInfo) DecodeReply(b []byte) (any, error) { return pi.decodeReply(b) }

// EncodeRequest encodes v, which must be a Req.
func (pi PacketInfo) EncodeRequest(v any) ([]byte, error) { return pi.encodeAs(pi.Request, v) }

// EncodeReply encodes v, which must be a Resp.
func (pi PacketInfo) EncodeReply(v any) ([]byte, error) { return pi.encodeAs(pi.Reply, v) }

func (pi PacketInfo) encodeAs(t reflect.Type, v any) ([]byte, error) {
	if reflect.TypeOf(v) != t {
		return nil, fmt.Errorf("%w: packet %q wants %v, got %T", zerr.ErrBadPayload, pi.Name, t, v)
	}
	return encodePayload(v)
}

// Registry maps packet names to their request and reply Go types. It is safe
// for concurrent use; registration normally happens at setup and lookups on
// every message.
type Registry struct {
	mu      sync.RWMutex
	packets map[string]PacketInfo
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{packets: make(map[string]PacketInfo)}
}

// Register adds p to r. Registering the same name again with the same types
// is a no-op; with different types it fails with ErrDuplicatePacket. An empty
// name fails with ErrUnknownPacket.
func Register[Req, Resp any](r *Registry, p Packet[Req, Resp]) error {
	if p.name == "" {
		return fmt.Errorf("%w: empty packet name", zerr.ErrUnknownPacket)
	}
	info := PacketInfo{
		Name:    p.name,
		Request: reflect.TypeFor[Req](),
		Reply:   reflect.TypeFor[Resp](),
		decodeRequest: func(b []byte) (any, error) {
			v, err := p.DecodeRequest(b)
			if err != nil {
				return nil, err
			}
			return v, nil
		},
		decodeReply: func(b []byte) (any, error) {
			v, err := p.DecodeReply(b)
			if err != nil {
				return nil, err
			}
			return v, nil
		},
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.packets[p.name]; ok {
		if old.Request == info.Request && old.Reply == info.Reply {
			return nil
		}
		return fmt.Errorf("%w: %q is %v→%v, not %v→%v", ErrDuplicatePacket, p.name,
			old.Request, old.Reply, info.Request, info.Reply)
	}
	r.packets[p.name] = info
	return nil
}

// Lookup returns the packet registered under name.
func (r *Registry) Lookup(name string) (PacketInfo, bool) {
	r.mu.RLock()
	pi, ok := r.packets[name]
	r.mu.RUnlock()
	return pi, ok
}

// maxPayloadDepth bounds the nesting of a payload (arrays/maps in arrays/maps).
const maxPayloadDepth = 64

// ValidatePayload checks that b is exactly one well-formed msgpack value
// whose every length prefix fits in b and whose nesting is at most 64
// levels. It allocates nothing. Payload decoding runs it first, because the
// msgpack library sizes some allocations from untrusted length prefixes.
func ValidatePayload(b []byte) error {
	r := newReader(b)
	r.Skip(maxPayloadDepth)
	if r.Err == nil && r.Off != len(b) {
		r.Fail("payload: trailing bytes")
	}
	if r.Err != nil {
		return fmt.Errorf("%w: %w", zerr.ErrBadPayload, r.Err)
	}
	return nil
}

type payloadDecoder struct {
	rd  bytes.Reader
	dec *msgpack.Decoder
}

var decoderPool = sync.Pool{New: func() any {
	d := &payloadDecoder{}
	d.dec = msgpack.NewDecoder(&d.rd)
	d.dec.DisallowUnknownFields(true)
	return d
}}

// isEmpty reports whether v is a *struct{} and b the empty map it is
// encoded as: nothing to decode (a timer's tick, an empty reply).
func isEmpty(v any, b []byte) bool {
	_, ok := v.(*struct{})
	return ok && len(b) == 1 && b[0] == 0x80
}

func decodePayload(b []byte, v any) error {
	if err := ValidatePayload(b); err != nil {
		return err
	}
	d := decoderPool.Get().(*payloadDecoder)
	defer decoderPool.Put(d)
	d.rd.Reset(b)
	d.dec.Reset(&d.rd)
	d.dec.DisallowUnknownFields(true)
	if err := d.dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", zerr.ErrBadPayload, err)
	}
	if d.rd.Len() != 0 {
		return fmt.Errorf("%w: trailing bytes", zerr.ErrBadPayload)
	}
	return nil
}

type payloadEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoderPool = sync.Pool{New: func() any {
	e := &payloadEncoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

func encodePayload(v any) ([]byte, error) {
	e := encoderPool.Get().(*payloadEncoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	var out []byte
	if err == nil {
		out = bytes.Clone(e.buf.Bytes())
	}
	if e.buf.Cap() <= 64<<10 { // do not pin huge buffers in the pool
		encoderPool.Put(e)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", zerr.ErrBadPayload, err)
	}
	return out, nil
}
