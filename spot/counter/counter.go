// Package counter is the built-in "counter" Spot kind that zlink-node
// hosts with `run --object server`: each Spot holds one integer. Its
// packets take and return decimal text, so the CLI can call them:
// "add" N adds N and returns the new value, "get" returns the value.
// A durable reminder of a counter (zlink-node spot-reminders) adds its
// payload (decimal; empty: 1) at every firing (a payload that is not a
// number, or a sum that would overflow, changes nothing).
//
// It owns nothing but the kind's definition.
package counter

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zlink-go/zlink/spot"
)

// KindName is the kind's name.
const KindName = "counter"

// State is one counter Spot's state.
type State struct{ N int64 }

// Kind returns the counter kind. Its state is persistent (saved every 10
// messages, every second while changed, and at deactivation), so a counter
// survives idle deactivation, moves, drains and restarts of its host.
func Kind() *spot.Kind[State] {
	return spot.NewKind(KindName, func(string) *State { return &State{} }).
		Persist(spot.Persistence{Version: 1, Every: 10, Interval: time.Second}).
		OnRaw("add", func(_ *spot.Context, s *State, p []byte) ([]byte, error) { return s.add(p) }).
		OnRaw("get", func(_ *spot.Context, s *State, _ []byte) ([]byte, error) {
			return strconv.AppendInt(nil, s.N, 10), nil
		}).
		OnReminder(func(_ *spot.Context, s *State, r spot.Reminder) error {
			p := r.Payload
			if len(p) == 0 {
				p = []byte("1")
			}
			_, _ = s.add(p) // an error leaves the counter as it was
			return nil
		})
}

// Errors of the counter's packets. A caller on another node receives them
// as the handler's error (ErrHandler) with this message.
var (
	// ErrBadNumber: the payload of "add" is not a decimal int64.
	ErrBadNumber = errors.New("zlink: counter: want a decimal integer")
	// ErrOverflow: "add" would take the counter past the int64 range; the
	// counter is left as it was.
	ErrOverflow = errors.New("zlink: counter: the sum overflows int64")
)

// add adds the decimal p to the counter and returns the new value as
// decimal text; it refuses a sum outside the int64 range.
func (s *State) add(p []byte) ([]byte, error) {
	n, err := strconv.ParseInt(string(p), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("add: %w, got %.32q", ErrBadNumber, p)
	}
	sum := s.N + n
	if (n > 0 && sum < s.N) || (n < 0 && sum > s.N) {
		return nil, fmt.Errorf("add %d to %d: %w", n, s.N, ErrOverflow)
	}
	s.N = sum
	return strconv.AppendInt(nil, s.N, 10), nil
}
