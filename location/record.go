package location

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

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
	// maxKinds bounds the Spot kinds one descriptor lists (each a Spot
	// kind name, at most maxNameLen bytes).
	maxKinds = 64
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
	Mesh             string        `msgpack:"m"`
	RID              string        `msgpack:"r"`
	Generation       uint64        `msgpack:"g"`
	Revision         uint64        `msgpack:"v"`
	Endpoint         string        `msgpack:"e"`
	Servers          serverWeights `msgpack:"s"`
	ObjectRole       uint8         `msgpack:"o"`
	PlacementWeight  uint32        `msgpack:"w"`
	SecurityIdentity string        `msgpack:"i"`
	Protocol         uint16        `msgpack:"p"`
	Draining         bool          `msgpack:"d"`
	Discovers        bool          `msgpack:"a"`
	// Kinds is written only when the descriptor lists its kinds (non-nil,
	// possibly empty); a reader of an older version skips it.
	Kinds *[]string `msgpack:"k,omitempty"`
}

// serverWeights is the Servers map of a descriptor record, written with
// its names sorted: the same descriptor always encodes to the same bytes
// (so a put of unchanged content is a renewal: no revision, no push).
type serverWeights map[string]uint16

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s serverWeights) EncodeMsgpack(enc *msgpack.Encoder) error {
	if s == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(s)); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(s)) {
		if err := enc.EncodeString(name); err != nil {
			return err
		}
		if err := enc.EncodeUint(uint64(s[name])); err != nil {
			return err
		}
	}
	return nil
}

type publisherRecord struct {
	Channel    string `msgpack:"c"`
	RID        string `msgpack:"r"`
	Generation uint64 `msgpack:"g"`
	Endpoint   string `msgpack:"e"`
}

func encodeDescriptor(d Descriptor) (string, error) {
	rec := descriptorRecord{
		Mesh: d.Mesh, RID: d.RID, Generation: d.Generation, Revision: d.Revision, Endpoint: d.Endpoint,
		Servers: d.Servers, ObjectRole: uint8(d.ObjectRole), PlacementWeight: d.PlacementWeight,
		SecurityIdentity: d.SecurityIdentity, Protocol: d.Protocol, Draining: d.Draining,
		Discovers: d.Discovers,
	}
	if d.Kinds != nil {
		rec.Kinds = &d.Kinds
	}
	b, err := msgpack.Marshal(rec)
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
		case "k":
			d.Kinds, err = r.kinds()
		default:
			return r.skip()
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
			return r.skip()
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
	r := newMsgReader(s)
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
	if r.left() != 0 {
		return fmt.Errorf("%d trailing bytes", r.left())
	}
	return nil
}
