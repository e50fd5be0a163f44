package placement

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestHash64_Golden pins placement hash v1. If this fails, every node of a
// mixed-version mesh would disagree on owners: bump the hash version on
// purpose or revert.
func TestHash64_Golden(t *testing.T) {
	tests := []struct {
		kind, id, rid string
		want          uint64
	}{
		{"", "", "", 0x12398e96d3959659},
		{"player", "42", "node-a", 0xcda118377b406ba9},
		{"room", "lobby/7", "rid-0001", 0xa94065498817a4d3},
		// Length prefixes keep field boundaries: these must differ.
		{"ab", "c", "d", 0xe1aee993cd392899},
		{"a", "bc", "d", 0x051a482f968de104},
	}
	for _, tc := range tests {
		if got := hash64(tc.kind, tc.id, tc.rid); got != tc.want {
			t.Errorf("hash64(%q, %q, %q) = %#x, want %#x", tc.kind, tc.id, tc.rid, got, tc.want)
		}
	}
}

func TestHash64_FieldBoundaries(t *testing.T) {
	if hash64("ab", "c", "d") == hash64("a", "bc", "d") {
		t.Fatal("hash64 ignores the kind/id boundary")
	}
	if hash64("a", "bc", "d") == hash64("a", "b", "cd") {
		t.Fatal("hash64 ignores the id/rid boundary")
	}
}

func TestUnit_Bounds(t *testing.T) {
	for _, h := range []uint64{0, 1, 1 << 12, math.MaxUint64 >> 1, math.MaxUint64} {
		u := unit(h)
		if !(u > 0 && u < 1) {
			t.Errorf("unit(%#x) = %v, want in (0, 1)", h, u)
		}
	}
	if unit(0) != 0x1p-53 || unit(math.MaxUint64) != 1-0x1p-53 {
		t.Errorf("unit extremes = %v, %v", unit(0), unit(math.MaxUint64))
	}
}

// TestPortableLog_MatchesMath checks the portable logarithm against
// math.Log (oracle) to within one ulp over the whole range unit produces.
func TestPortableLog_MatchesMath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		u := unit(rapid.Uint64().Draw(t, "h"))
		got, want := portableLog(u), math.Log(u)
		if got >= 0 || math.IsNaN(got) || math.IsInf(got, 0) {
			t.Fatalf("portableLog(%v) = %v, want finite negative", u, got)
		}
		if d := math.Abs(got - want); d > ulp(want) {
			t.Fatalf("portableLog(%v) = %v, math.Log = %v, diff %g > 1 ulp", u, got, want, d)
		}
	})
	for _, u := range []float64{unit(0), unit(math.MaxUint64), 0.5, math.Sqrt2 / 2, 0.25} {
		if d := math.Abs(portableLog(u) - math.Log(u)); d > ulp(math.Log(u)) {
			t.Errorf("portableLog(%v) off by %g", u, d)
		}
	}
}

func TestPortableLog_PanicsOutsideUnitInterval(t *testing.T) {
	for _, x := range []float64{0, 1, -1, 2, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("portableLog(%v) did not panic", x)
				}
			}()
			portableLog(x)
		}()
	}
}

func ulp(x float64) float64 {
	x = math.Abs(x)
	return math.Nextafter(x, math.Inf(1)) - x
}
