package wire

import (
	"math"
	"slices"
)

// Layout (all msgpack, array form):
//
//	frame    = [version, type, body]
//	hello    = [identity, nonce bin16, expectRID, configGeneration]
//	welcome  = [identity, nonce bin16, proof bin32]
//	auth     = [proof bin32]
//	reject   = [reason, detail]
//	batch    = [envelope...]
//	identity = [mesh, rid, generation, revision, objectRole, servers map|nil,
//	            securityIdentity, endpoint, protocol, capabilities array|nil,
//	            recvLimit, draining]
const (
	frameFields    = 3
	helloFields    = 4
	welcomeFields  = 3
	authFields     = 1
	rejectFields   = 2
	identityFields = 12
)

var errFrameBody = &DecodeError{Offset: -1, Reason: "frame body does not match frame type"}

// AppendFrame encodes f and appends it to dst. It fails (and returns dst
// unchanged) when the body does not match the type, a handshake identity is
// invalid, an envelope has an invalid Kind (errors wrapping ErrProtocol), or
// a length does not fit the wire (ErrTooLarge).
func AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	if err := checkBody(f); err != nil {
		return dst, err
	}
	e := encoder{b: dst}
	e.arrayHeader(frameFields)
	e.uint(uint64(ProtocolVersion))
	e.uint(uint64(f.Type))
	switch f.Type {
	case FrameHello:
		h := f.Hello
		e.arrayHeader(helloFields)
		e.identity(&h.Identity)
		e.bin(h.Nonce[:])
		e.string(h.ExpectRID)
		e.uint(h.ConfigGeneration)
	case FrameWelcome:
		w := f.Welcome
		e.arrayHeader(welcomeFields)
		e.identity(&w.Identity)
		e.bin(w.Nonce[:])
		e.bin(w.Proof[:])
	case FrameAuth:
		e.arrayHeader(authFields)
		e.bin(f.Auth.Proof[:])
	case FrameReject:
		e.arrayHeader(rejectFields)
		e.uint(uint64(f.Reject.Reason))
		e.string(f.Reject.Detail)
	case FrameBatch:
		e.arrayHeader(len(f.Batch))
		for i := range f.Batch {
			e.envelope(&f.Batch[i])
		}
	}
	if e.err == nil && uint64(len(e.b)-len(dst)) > MaxFrameSize {
		e.err = &TooLargeError{Size: uint64(len(e.b) - len(dst)), Limit: MaxFrameSize}
	}
	if e.err != nil {
		return dst, e.err
	}
	return e.b, nil
}

func checkBody(f *Frame) error {
	if f.Type < FrameHello || f.Type > FrameBatch {
		return &VersionError{Version: ProtocolVersion, Type: f.Type}
	}
	// Exactly the body of its type is set (a batch may be empty: nil).
	set := [...]bool{
		FrameHello:   f.Hello != nil,
		FrameWelcome: f.Welcome != nil,
		FrameAuth:    f.Auth != nil,
		FrameReject:  f.Reject != nil,
		FrameBatch:   f.Batch != nil,
	}
	for t, has := range set {
		want := FrameType(t) == f.Type
		if t == 0 || FrameType(t) == FrameBatch && want {
			continue // no type 0; a batch may be empty (nil)
		}
		if has != want {
			return errFrameBody
		}
	}
	switch f.Type {
	case FrameHello:
		return f.Hello.Validate()
	case FrameWelcome:
		return f.Welcome.Validate()
	case FrameReject:
		if f.Reject.Reason == 0 {
			return &DecodeError{Offset: -1, Reason: "reject: zero reason"}
		}
	case FrameBatch:
		for i := range f.Batch {
			if !f.Batch[i].Kind.valid() {
				return &DecodeError{Offset: -1, Reason: "envelope: invalid kind"}
			}
		}
	}
	return nil
}

func (e *encoder) identity(id *Identity) {
	e.arrayHeader(identityFields)
	e.string(id.Mesh)
	e.string(id.RID)
	e.uint(id.Generation)
	e.uint(id.Revision)
	e.uint(uint64(id.ObjectRole))
	e.weights(id.Servers)
	e.string(id.SecurityIdentity)
	e.string(id.Endpoint)
	e.uint(uint64(id.Protocol))
	if id.Capabilities == nil {
		e.nil()
	} else {
		e.arrayHeader(len(id.Capabilities))
		for _, c := range id.Capabilities {
			e.string(c)
		}
	}
	e.uint(id.RecvLimit)
	e.bool(id.Draining)
}

// sortedKeys returns m's keys in order, using buf when it is large enough,
// so encoding is deterministic.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (e *encoder) weights(m map[string]uint16) {
	if m == nil {
		e.nil()
		return
	}
	e.mapHeader(len(m))
	var buf [16]string
	for _, k := range sortedKeys(m, buf[:]) {
		e.string(k)
		e.uint(uint64(m[k]))
	}
}

func (e *encoder) headroom(m map[string]uint32) {
	if m == nil {
		e.nil()
		return
	}
	e.mapHeader(len(m))
	var buf [16]string
	for _, k := range sortedKeys(m, buf[:]) {
		e.string(k)
		e.uint(uint64(m[k]))
	}
}

// DecodeFrame decodes one frame. It never panics, and allocates O(len(b)):
// every length prefix and element count is checked against the bytes that
// remain before anything is allocated. Garbage gives an error wrapping
// ErrProtocol (a *DecodeError); an unknown version or frame type gives a
// *VersionError, which matches ErrProtocol and ErrVersion.
//
// Envelope payloads alias b: b must not be modified while the frame or its
// envelopes are in use (a ZMQ message buffer is never reused, so the
// transport can hand it over as is).
func DecodeFrame(b []byte) (*Frame, error) {
	f := &Frame{}
	if err := decodeFrame(f, b, nil); err != nil {
		return nil, err
	}
	return f, nil
}

// DecodeFrameInto is DecodeFrame for a reader that is done with one frame
// before it decodes the next: it decodes into *f (overwriting all of it)
// and decodes a Batch into batch's memory when it has room for every
// envelope (f.Batch then shares batch's array; otherwise a new one is
// made). It fails exactly when DecodeFrame fails, with the same error;
// *f is then unspecified. Envelope payloads alias b, as with DecodeFrame.
func DecodeFrameInto(f *Frame, b []byte, batch []Envelope) error {
	*f = Frame{}
	return decodeFrame(f, b, batch)
}

func decodeFrame(f *Frame, b []byte, batch []Envelope) error {
	return decodeFrameWith(f, b, batch, nil)
}

func decodeFrameWith(f *Frame, b []byte, batch []Envelope, maps *Maps) error {
	r := newReader(b)
	r.maps = maps
	n := r.ArrayHeader()
	if r.Err == nil && n < 2 {
		r.Fail("frame: short header")
	}
	version := r.Uint(math.MaxUint16)
	if r.Err != nil {
		return r.Err
	}
	if uint16(version) != ProtocolVersion {
		return &VersionError{Version: uint16(version)}
	}
	if n != frameFields {
		r.Fail("frame: wrong field count")
		return r.Err
	}
	t := FrameType(r.Uint(math.MaxUint8))
	if r.Err != nil {
		return r.Err
	}
	f.Type = t
	switch t {
	case FrameHello:
		r.fields(helloFields)
		h := &Hello{}
		r.identity(&h.Identity)
		r.FixedBin(h.Nonce[:])
		h.ExpectRID = r.Str()
		h.ConfigGeneration = r.Uint(math.MaxUint64)
		f.Hello = h
	case FrameWelcome:
		r.fields(welcomeFields)
		w := &Welcome{}
		r.identity(&w.Identity)
		r.FixedBin(w.Nonce[:])
		r.FixedBin(w.Proof[:])
		f.Welcome = w
	case FrameAuth:
		r.fields(authFields)
		a := &Auth{}
		r.FixedBin(a.Proof[:])
		f.Auth = a
	case FrameReject:
		r.fields(rejectFields)
		rj := &Reject{}
		rj.Reason = RejectReason(r.Uint(math.MaxUint8))
		if r.Err == nil && rj.Reason == 0 {
			r.Fail("reject: zero reason")
		}
		rj.Detail = r.Str()
		f.Reject = rj
	case FrameBatch:
		f.Batch = r.batch(batch)
	default:
		return &VersionError{Version: ProtocolVersion, Type: t}
	}
	if r.Err == nil && r.Off != len(b) {
		r.Fail("frame: trailing bytes")
	}
	return r.Err
}

// fields reads an array header that must have exactly n elements.
func (r *reader) fields(n int) {
	if got := r.ArrayHeader(); r.Err == nil && got != n {
		r.Fail("wrong field count")
	}
}

func (r *reader) identity(id *Identity) {
	start := r.Off
	r.fields(identityFields)
	id.Mesh = r.Str()
	id.RID = r.Str()
	id.Generation = r.Uint(math.MaxUint64)
	id.Revision = r.Uint(math.MaxUint64)
	id.ObjectRole = uint8(r.Uint(math.MaxUint8))
	id.Servers = r.weights()
	id.SecurityIdentity = r.Str()
	id.Endpoint = r.Str()
	id.Protocol = uint16(r.Uint(math.MaxUint16))
	if !r.PeekNil() {
		n := r.ArrayHeader()
		id.Capabilities = make([]string, 0, n)
		for i := 0; i < n && r.Err == nil; i++ {
			id.Capabilities = append(id.Capabilities, r.Str())
		}
	}
	id.RecvLimit = r.Uint(MaxFrameSize)
	id.Draining = r.Bool()
	if r.Err == nil {
		if reason := id.problem(); reason != "" {
			r.Off = start
			r.Fail(reason)
		}
	}
}

func (r *reader) weights() map[string]uint16 {
	n, isNil := r.MapHeader()
	if isNil || r.Err != nil {
		return nil
	}
	return fresh[uint16](r, n, MaxWeight)
}

func (r *reader) headroom() map[string]uint32 {
	n, isNil := r.MapHeader()
	if isNil || r.Err != nil {
		return nil
	}
	return fresh[uint32](r, n, math.MaxUint32)
}

// fresh reads a msgpack map of n entries (its header read) into a new map.
func fresh[V uint16 | uint32](r *reader, n int, max uint64) map[string]V {
	m := make(map[string]V, n)
	for i := 0; i < n && r.Err == nil; i++ {
		k := r.Str()
		m[k] = V(r.Uint(max))
		if len(m) != i+1 {
			r.Fail("duplicate map key")
		}
	}
	return m
}
