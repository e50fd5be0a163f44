package placement

import "math"

// Placement hash v1; see the package doc. Changing anything in this file
// changes Spot owners across a mesh.

const (
	fnvOffset64 = 0xcbf29ce484222325
	fnvPrime64  = 0x100000001b3
)

// fnvString feeds len(s) as 4-byte big-endian, then s, into FNV-1a state h.
func fnvString(h uint64, s string) uint64 {
	n := uint32(len(s))
	for _, b := range [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} {
		h ^= uint64(b)
		h *= fnvPrime64
	}
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// spotPrefix returns the FNV-1a state after kind and id, shared by all
// members of one placement decision.
func spotPrefix(kind, id string) uint64 {
	return fnvString(fnvString(fnvOffset64, kind), id)
}

// fmix64 is the MurmurHash3 64-bit finalizer.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// hash64 is the placement hash of (kind, id, rid).
func hash64(kind, id, rid string) uint64 {
	return memberHash(spotPrefix(kind, id), rid)
}

// memberHash completes the hash of a Spot prefix with a member RID.
func memberHash(prefix uint64, rid string) uint64 {
	return fmix64(fnvString(prefix, rid))
}

// unit maps h to u = (2*(h>>12)+1) / 2^53, exact and strictly inside (0, 1).
func unit(h uint64) float64 {
	return float64(2*(h>>12)+1) / (1 << 53)
}

// score is the weighted rendezvous score -w/ln(u) of member m for the Spot
// whose hash prefix is prefix. m must be eligible (Weight > 0). The result
// is finite and positive.
func score(prefix uint64, m Member) float64 {
	return float64(m.Weight) / -portableLog(unit(memberHash(prefix, m.RID)))
}

// portableLog returns ln(x) for x in (0, 1), bit-identical on every
// architecture. It is fdlibm's __ieee754_log as in Go's pure-Go math.log,
// with each product converted explicitly so it cannot be fused into an FMA
// (Go spec, "Floating-point operators"). Error < 1 ulp.
func portableLog(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01 /* 3fe62e42 fee00000 */
		ln2Lo = 1.90821492927058770002e-10 /* 3dea39ef 35793c76 */
		l1    = 6.666666666666735130e-01   /* 3FE55555 55555593 */
		l2    = 3.999999999940941908e-01   /* 3FD99999 9997FA04 */
		l3    = 2.857142874366239149e-01   /* 3FD24924 94229359 */
		l4    = 2.222219843214978396e-01   /* 3FCC71C5 1D8E78AF */
		l5    = 1.818357216161805012e-01   /* 3FC74664 96CB03DE */
		l6    = 1.531383769920937332e-01   /* 3FC39A09 D078C69F */
		l7    = 1.479819860511658591e-01   /* 3FC2F112 DF3E5244 */
	)
	if !(x > 0 && x < 1) {
		panic("placement: portableLog outside (0, 1)")
	}
	f1, ki := math.Frexp(x) // exact: f1 in [0.5, 1)
	if f1 < math.Sqrt2/2 {
		f1 *= 2 // exact
		ki--
	}
	f := f1 - 1
	k := float64(ki)

	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}
