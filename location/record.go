package location

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// Limits on every record the store writes and reads back (listed in
// doc.go). A write beyond them fails with ErrInvalid; a stored record
// beyond them is corrupt (ErrCorrupt) and never reaches a caller.
const (
	// maxNameLen bounds a mesh name, RID, fanout channel, Server
	// ChannelName and Spot kind, in bytes (ZeroMQ routing IDs are at most
	// 255 bytes).
	maxNameLen = 256
	// maxEndpointLen bounds an endpoint and a security identity, in bytes.
	maxEndpointLen = 1024
	// maxServers bounds the Server entries of one descriptor.
	maxServers = 1024
	// maxServerWeight is the highest Server channel weight.
	maxServerWeight = 10000
	// maxEpoch is the highest fencing epoch: at most 15 decimal digits,
	// so every epoch is exact in a Lua double (the scripts only compare
	// and store epochs as strings, but a reader may parse them).
	maxEpoch = 1e15 - 1
	// maxRecordBytes bounds one encoded descriptor or publisher; the Lua
	// scripts cut longer values at maxRecordBytes+1 so a reply stays
	// bounded.
	maxRecordBytes = 512 << 10
	// maxRecordFields bounds the fields of an encoded record (including
	// fields unknown to this version, which are skipped).
	maxRecordFields = 64
	// maxSkipDepth bounds the nesting of an unknown field's value.
	maxSkipDepth = 4
)

// descriptorRecord is the msgpack form of a Descriptor in Redis. Written
// by msgpack.Marshal (a map keyed by the short field names); read by
// decodeDescriptor, which accepts any msgpack encoding of the same map.
type descriptorRecord struct {
	Mesh             string            `msgpack:"m"`
	RID              string            `msgpack:"r"`
	Generation       uint64            `msgpack:"g"`
	Revision         uint64            `msgpack:"v"`
	Endpoint         string            `msgpack:"e"`
	Servers          map[string]uint16 `msgpack:"s"`
	ObjectRole       uint8             `msgpack:"o"`
	PlacementWeight  uint32            `msgpack:"w"`
	SecurityIdentity string            `msgpack:"i"`
	Protocol         uint16            `msgpack:"p"`
	Draining         bool              `msgpack:"d"`
	Discovers        bool              `msgpack:"a"`
}

type publisherRecord struct {
	Channel    string `msgpack:"c"`
	RID        string `msgpack:"r"`
	Generation uint64 `msgpack:"g"`
	Endpoint   string `msgpack:"e"`
}

func encodeDescriptor(d Descriptor) (string, error) {
	b, err := msgpack.Marshal(descriptorRecord{
		Mesh: d.Mesh, RID: d.RID, Generation: d.Generation, Revision: d.Revision, Endpoint: d.Endpoint,
		Servers: d.Servers, ObjectRole: uint8(d.ObjectRole), PlacementWeight: d.PlacementWeight,
		SecurityIdentity: d.SecurityIdentity, Protocol: d.Protocol, Draining: d.Draining,
		Discovers: d.Discovers,
	})
	if err != nil {
		return "", fmt.Errorf("zlink: encode descriptor: %w", err)
	}
	return string(b), nil
}

func encodePublisher(p Publisher) (string, error) {
	b, err := msgpack.Marshal(publisherRecord{Channel: p.Channel, RID: p.RID, Generation: p.Generation, Endpoint: p.Endpoint})
	if err != nil {
		return "", fmt.Errorf("zlink: encode publisher: %w", err)
	}
	return string(b), nil
}

// decodeDescriptor decodes and validates a stored descriptor. It never
// panics, allocates at most a small multiple of len(s), and returns an
// error wrapping ErrCorrupt for anything but a valid descriptor.
func decodeDescriptor(s string) (Descriptor, error) {
	var d Descriptor
	err := decodeRecord(s, func(r *msgReader, key string) error {
		var err error
		switch key {
		case "m":
			d.Mesh, err = r.str(maxNameLen)
		case "r":
			d.RID, err = r.str(maxNameLen)
		case "g":
			d.Generation, err = r.uint(1<<64 - 1)
		case "v":
			d.Revision, err = r.uint(1<<64 - 1)
		case "e":
			d.Endpoint, err = r.str(maxEndpointLen)
		case "s":
			d.Servers, err = r.servers()
		case "o":
			var v uint64
			v, err = r.uint(1<<8 - 1)
			d.ObjectRole = ObjectRole(v)
		case "w":
			var v uint64
			v, err = r.uint(1<<32 - 1)
			d.PlacementWeight = uint32(v)
		case "i":
			d.SecurityIdentity, err = r.str(maxEndpointLen)
		case "p":
			var v uint64
			v, err = r.uint(1<<16 - 1)
			d.Protocol = uint16(v)
		case "d":
			d.Draining, err = r.bool()
		case "a":
			d.Discovers, err = r.bool()
		default:
			return r.skip(0)
		}
		return err
	})
	if err == nil {
		err = d.validate()
	}
	if err != nil {
		return Descriptor{}, corruptf("descriptor: %v", err)
	}
	return d, nil
}

// decodePublisher decodes and validates a stored publisher, like
// decodeDescriptor.
func decodePublisher(s string) (Publisher, error) {
	var p Publisher
	err := decodeRecord(s, func(r *msgReader, key string) error {
		var err error
		switch key {
		case "c":
			p.Channel, err = r.str(maxNameLen)
		case "r":
			p.RID, err = r.str(maxNameLen)
		case "g":
			p.Generation, err = r.uint(1<<64 - 1)
		case "e":
			p.Endpoint, err = r.str(maxEndpointLen)
		default:
			return r.skip(0)
		}
		return err
	})
	if err == nil {
		err = p.validate()
	}
	if err != nil {
		return Publisher{}, corruptf("publisher: %v", err)
	}
	return p, nil
}

// parseSpotRecord builds the ownership record of Spot spot from the stored
// fields {owner, gen, epoch} as the scripts return them: {"", "", "0"} for
// an absent record, an empty owner and generation with the kept epoch for a
// released one. Anything a writer of this package could not have stored is
// refused with ErrCorrupt.
func parseSpotRecord(spot Ownership, f []string) (Ownership, error) {
	spot.OwnerRID, spot.OwnerGeneration, spot.Epoch = "", 0, 0
	if len(f) != 3 {
		return Ownership{}, corruptf("spot record %s/%s: %d fields", spot.Kind, spot.ID, len(f))
	}
	owner, gen, epoch := f[0], f[1], f[2]
	if owner == "" && gen == "" && epoch == "0" {
		return spot, nil // absent
	}
	e, ok := canonicalUint(epoch, maxEpoch)
	if !ok {
		return Ownership{}, corruptf("spot record %s/%s: epoch %.24q", spot.Kind, spot.ID, epoch)
	}
	spot.Epoch = e
	if owner == "" {
		if gen != "" {
			return Ownership{}, corruptf("spot record %s/%s: generation %.24q without an owner", spot.Kind, spot.ID, gen)
		}
		return spot, nil // released
	}
	if len(owner) > maxNameLen {
		return Ownership{}, corruptf("spot record %s/%s: owner of %d bytes", spot.Kind, spot.ID, len(owner))
	}
	g, ok := canonicalUint(gen, 1<<64-1)
	if !ok {
		return Ownership{}, corruptf("spot record %s/%s: generation %.24q", spot.Kind, spot.ID, gen)
	}
	spot.OwnerRID, spot.OwnerGeneration = owner, g
	return spot, nil
}

// canonicalUint parses a decimal in 1..max written without sign or leading
// zeros: the only form the scripts write and compare as strings.
func canonicalUint(s string, max uint64) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || s[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v <= max
}

// decodeRecord reads one msgpack map of string keys from s, calling field
// for every key (each at most once), and refuses trailing bytes.
func decodeRecord(s string, field func(r *msgReader, key string) error) error {
	if len(s) > maxRecordBytes {
		return fmt.Errorf("%d bytes, more than %d", len(s), maxRecordBytes)
	}
	r := &msgReader{b: s}
	n, isNil, err := r.mapLen()
	if err != nil {
		return err
	}
	if isNil || n > maxRecordFields {
		return fmt.Errorf("record is not a map of at most %d fields", maxRecordFields)
	}
	seen := make(map[string]struct{}, n)
	for range n {
		key, err := r.str(maxNameLen)
		if err != nil {
			return fmt.Errorf("field name: %w", err)
		}
		if _, dup := seen[key]; dup {
			return fmt.Errorf("field %q twice", key)
		}
		seen[key] = struct{}{}
		if err := field(r, key); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
	}
	if r.off != len(r.b) {
		return fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	return nil
}

// msgReader reads the subset of msgpack a record uses from a string,
// checking every declared length against the bytes that remain before
// using it, so nothing is allocated beyond the input's size.
type msgReader struct {
	b   string
	off int
}

var errShort = errors.New("truncated")

func (r *msgReader) take(n int) (string, error) {
	if n < 0 || n > len(r.b)-r.off {
		return "", errShort
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v, nil
}

func (r *msgReader) code() (byte, error) {
	v, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// be reads an n-byte big-endian unsigned integer (n is 1, 2, 4 or 8).
func (r *msgReader) be(n int) (uint64, error) {
	v, err := r.take(n)
	if err != nil {
		return 0, err
	}
	var buf [8]byte
	copy(buf[8-n:], v)
	return binary.BigEndian.Uint64(buf[:]), nil
}

// length reads the length following a str8/16/32, bin8/16/32, array16/32
// or map16/32 code, by its width in bytes.
func (r *msgReader) length(width int) (int, error) {
	v, err := r.be(width)
	if err != nil {
		return 0, err
	}
	if v > uint64(len(r.b)-r.off) { // more than what remains: a lie
		return 0, errShort
	}
	return int(v), nil
}

func (r *msgReader) mapLen() (n int, isNil bool, err error) {
	c, err := r.code()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c == 0xc0:
		return 0, true, nil
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), false, nil
	case c == 0xde:
		n, err = r.length(2)
	case c == 0xdf:
		n, err = r.length(4)
	default:
		return 0, false, fmt.Errorf("code 0x%02x is not a map", c)
	}
	return n, false, err
}

// str reads a str or bin of at most max bytes.
func (r *msgReader) str(max int) (string, error) {
	c, err := r.code()
	if err != nil {
		return "", err
	}
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, err = r.length(1)
	case c == 0xda || c == 0xc5:
		n, err = r.length(2)
	case c == 0xdb || c == 0xc6:
		n, err = r.length(4)
	default:
		return "", fmt.Errorf("code 0x%02x is not a string", c)
	}
	if err != nil {
		return "", err
	}
	if n > max {
		return "", fmt.Errorf("string of %d bytes, more than %d", n, max)
	}
	v, err := r.take(n)
	return strings.Clone(v), err // the decoded record keeps nothing of s
}

// uint reads a non-negative integer of at most max, in any msgpack width.
func (r *msgReader) uint(max uint64) (uint64, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	var v uint64
	switch {
	case c <= 0x7f:
		v = uint64(c)
	case c >= 0xcc && c <= 0xcf: // uint8..uint64
		v, err = r.be(1 << (c - 0xcc))
	case c >= 0xd0 && c <= 0xd3: // int8..int64: only non-negative values
		w := 1 << (c - 0xd0)
		v, err = r.be(w)
		if err == nil && v>>(8*w-1) != 0 {
			return 0, fmt.Errorf("negative integer")
		}
	default:
		return 0, fmt.Errorf("code 0x%02x is not an unsigned integer", c)
	}
	if err != nil {
		return 0, err
	}
	if v > max {
		return 0, fmt.Errorf("integer %d above %d", v, max)
	}
	return v, nil
}

func (r *msgReader) bool() (bool, error) {
	c, err := r.code()
	if err != nil {
		return false, err
	}
	switch c {
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	}
	return false, fmt.Errorf("code 0x%02x is not a bool", c)
}

// servers reads the Servers map (nil stays nil); validate checks names and
// weights.
func (r *msgReader) servers() (map[string]uint16, error) {
	n, isNil, err := r.mapLen()
	if err != nil || isNil {
		return nil, err
	}
	if n > maxServers {
		return nil, fmt.Errorf("%d servers, more than %d", n, maxServers)
	}
	m := make(map[string]uint16, n) // n ≤ maxServers and ≤ the bytes left
	for range n {
		name, err := r.str(maxNameLen)
		if err != nil {
			return nil, err
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("server %q twice", name)
		}
		w, err := r.uint(1<<16 - 1)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		m[name] = uint16(w)
	}
	return m, nil
}

// skip passes over one value of a field this version does not know (a
// newer writer's): scalars, strings and containers nested at most
// maxSkipDepth deep. Nothing is allocated.
func (r *msgReader) skip(depth int) error {
	if depth > maxSkipDepth {
		return fmt.Errorf("unknown value nested deeper than %d", maxSkipDepth)
	}
	c, err := r.code()
	if err != nil {
		return err
	}
	var n, items int // n bytes of payload, or items values to skip
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixint, nil, bool
		return nil
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c >= 0x90 && c <= 0x9f:
		items = int(c & 0x0f)
	case c >= 0x80 && c <= 0x8f:
		items = 2 * int(c&0x0f)
	case c == 0xcc || c == 0xd0:
		n = 1
	case c == 0xcd || c == 0xd1:
		n = 2
	case c == 0xce || c == 0xd2 || c == 0xca:
		n = 4
	case c == 0xcf || c == 0xd3 || c == 0xcb:
		n = 8
	case c == 0xd9 || c == 0xc4:
		n, err = r.length(1)
	case c == 0xda || c == 0xc5:
		n, err = r.length(2)
	case c == 0xdb || c == 0xc6:
		n, err = r.length(4)
	case c == 0xdc:
		items, err = r.length(2)
	case c == 0xdd:
		items, err = r.length(4)
	case c == 0xde:
		items, err = r.length(2)
		items *= 2
	case c == 0xdf:
		items, err = r.length(4)
		items *= 2
	default: // ext types and the reserved code: not in a record
		return fmt.Errorf("code 0x%02x in an unknown field", c)
	}
	if err != nil {
		return err
	}
	if _, err := r.take(n); err != nil {
		return err
	}
	if items > len(r.b)-r.off { // every item takes at least one byte
		return errShort
	}
	for range items {
		if err := r.skip(depth + 1); err != nil {
			return err
		}
	}
	return nil
}
