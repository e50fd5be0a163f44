package wire

import "math"

// Maps lets a reader that decodes one frame after another refill the
// Headroom and Servers maps of the Heartbeat envelopes it decodes instead
// of making new ones (DecodeFrameReusing): a peer's heartbeats carry the
// same channels each time, so at rest decoding one allocates nothing. The
// zero value is ready; one Maps serves one decode at a time.
//
// The maps of a decoded Heartbeat then belong to the Maps: they are valid
// until the next decode with it, and whoever keeps one longer (hands it
// to another goroutine, stores it) must copy it. Other kinds of envelope
// get maps of their own, as with DecodeFrameInto.
type Maps struct {
	servers  [reusedSlots]reused[uint16]
	headroom [reusedSlots]reused[uint32]
	ns, nh   int // slots taken by the current decode
}

// reusedSlots is how many heartbeats of one frame get reused maps (a
// frame carries one at rest; more get maps of their own).
const reusedSlots = 2

// reused is a map a decode refills in place. keys holds its keys in the
// order they were read: the encoder sorts them, so the same set comes in
// the same order and each key is matched without making a string.
type reused[V uint16 | uint32] struct {
	m    map[string]V
	keys []string
}

// DecodeFrameReusing is DecodeFrameInto with the maps of Heartbeat
// envelopes refilled from m (see Maps for who owns them). It fails
// exactly when DecodeFrame fails, with the same error.
func DecodeFrameReusing(f *Frame, b []byte, batch []Envelope, m *Maps) error {
	*f = Frame{}
	m.ns, m.nh = 0, 0
	return decodeFrameWith(f, b, batch, m)
}

// nextSlot returns the next of slots for the current decode (used counts
// those taken), nil when none is left or there is no Maps: the caller
// makes a map of its own.
func nextSlot[V uint16 | uint32](slots *[reusedSlots]reused[V], used *int) *reused[V] {
	if *used == reusedSlots {
		return nil
	}
	*used++
	return &slots[*used-1]
}

// refill reads a msgpack map of n entries (its header read) into u's map,
// which ends up holding exactly those entries. A key read in the same
// place as last time reuses that key's string.
func refill[V uint16 | uint32](r *reader, u *reused[V], n int, max uint64) map[string]V {
	if u.m == nil {
		u.m = make(map[string]V, n)
	}
	m, old := u.m, u.keys
	same := true // keys[:i] are the keys read so far
	for i := 0; i < n && r.Err == nil; i++ {
		kb := r.StrBytes()
		v := V(r.Uint(max))
		if r.Err != nil {
			break
		}
		if same && i < len(old) && string(kb) == old[i] {
			m[old[i]] = v
			continue
		}
		if same { // from here on the keys differ: drop the old ones left
			for _, k := range old[i:] {
				delete(m, k)
			}
			u.keys, same = old[:i], false
		}
		k := string(kb)
		m[k] = v
		u.keys = append(u.keys, k)
		if len(m) != i+1 {
			r.Fail("duplicate map key")
		}
	}
	if r.Err != nil {
		clear(m) // a failed decode leaves nothing to match next time
		u.keys = u.keys[:0]
		return m
	}
	if same && n < len(old) {
		for _, k := range old[n:] {
			delete(m, k)
		}
		u.keys = old[:n]
	}
	return m
}

// maxReusedEntries is the largest map refilled in place: a larger one is
// decoded into a map of its own, so a Maps never keeps more than this.
const maxReusedEntries = 64

// heartbeatServers reads the Servers map of a heartbeat into a reused map
// when a slot is left.
func (r *reader) heartbeatServers() map[string]uint16 {
	return heartbeatMap(r, &r.maps.servers, &r.maps.ns, MaxWeight)
}

func (r *reader) heartbeatHeadroom() map[string]uint32 {
	return heartbeatMap(r, &r.maps.headroom, &r.maps.nh, math.MaxUint32)
}

// heartbeatMap reads a heartbeat's map into the next of slots, or into a
// map of its own when it is large or no slot is left.
func heartbeatMap[V uint16 | uint32](r *reader, slots *[reusedSlots]reused[V], used *int, max uint64) map[string]V {
	n, isNil := r.MapHeader()
	if isNil || r.Err != nil {
		return nil
	}
	if n <= maxReusedEntries {
		if u := nextSlot(slots, used); u != nil {
			return refill(r, u, n, max)
		}
	}
	return fresh[V](r, n, max)
}
