package counter

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		start int64
		add   string
		want  int64
		err   error
	}{
		{0, "5", 5, nil},
		{5, "-7", -2, nil},
		{math.MaxInt64 - 1, "1", math.MaxInt64, nil},
		{math.MaxInt64, "1", math.MaxInt64, ErrOverflow},
		{1, strconv.FormatInt(math.MaxInt64, 10), 1, ErrOverflow},
		{math.MinInt64 + 1, "-1", math.MinInt64, nil},
		{math.MinInt64, "-1", math.MinInt64, ErrOverflow},
		{-2, strconv.FormatInt(math.MinInt64, 10), -2, ErrOverflow},
		{3, "9223372036854775808", 3, ErrBadNumber}, // past int64 as text
		{3, "x", 3, ErrBadNumber},
		{3, "", 3, ErrBadNumber},
	} {
		s := &State{N: tc.start}
		out, err := s.add([]byte(tc.add))
		if !errors.Is(err, tc.err) || (tc.err != nil) != (err != nil) {
			t.Errorf("%d + %s: %v, want %v", tc.start, tc.add, err, tc.err)
		}
		if s.N != tc.want {
			t.Errorf("%d + %s: counter %d, want %d", tc.start, tc.add, s.N, tc.want)
		}
		if err == nil && string(out) != strconv.FormatInt(tc.want, 10) {
			t.Errorf("%d + %s: reply %q", tc.start, tc.add, out)
		}
	}
}
