package benchrun

import (
	"math"
	"slices"
)

// CmpStat is the median and range of one quantity over the rounds of a
// scenario.
type CmpStat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// cmpStatOf summarises xs, ignoring NaN and infinite values (failed runs).
func cmpStatOf(xs []float64) CmpStat {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return CmpStat{}
	}
	slices.Sort(v)
	s := CmpStat{Min: v[0], Max: v[len(v)-1], N: len(v)}
	if len(v)%2 == 1 {
		s.Median = v[len(v)/2]
	} else {
		s.Median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return s
}

// cmpRatio is a/b, NaN when either is missing.
func cmpRatio(a, b float64) float64 {
	if a <= 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
