package fanout

import (
	"testing"
	"time"
)

func TestLiveness_Transitions(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const timeout = 100 * time.Millisecond
	type step struct {
		at       time.Duration // offset from t0
		heard    bool          // heard at this time, else check
		want     PublisherState
		changed  bool // check reported a transition
		received uint64
	}
	cases := map[string][]step{
		"never heard times out from creation": {
			{at: 99 * time.Millisecond, want: StateConnecting},
			{at: 100 * time.Millisecond, want: StateTimedOut, changed: true},
			{at: 300 * time.Millisecond, want: StateTimedOut},
		},
		"heard resets the clock": {
			{at: 90 * time.Millisecond, heard: true, want: StateLive, received: 1},
			{at: 189 * time.Millisecond, want: StateLive, received: 1},
			{at: 190 * time.Millisecond, want: StateTimedOut, changed: true, received: 1},
		},
		"timed out publisher comes back": {
			{at: 100 * time.Millisecond, want: StateTimedOut, changed: true},
			{at: 150 * time.Millisecond, heard: true, want: StateLive, received: 1},
			{at: 249 * time.Millisecond, want: StateLive, received: 1},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLiveness(t0)
			if l.state != StateConnecting {
				t.Fatalf("new state %v", l.state)
			}
			for i, s := range steps {
				now := t0.Add(s.at)
				changed := false
				if s.heard {
					l.heard(now)
				} else {
					changed = l.check(now, timeout)
				}
				if l.state != s.want || changed != s.changed || l.received != s.received {
					t.Fatalf("step %d: state %v changed %v received %d, want %v %v %d",
						i, l.state, changed, l.received, s.want, s.changed, s.received)
				}
			}
		})
	}
}

func TestLiveness_Expired(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLiveness(t0)
	if l.expired(t0.Add(time.Hour), time.Second) {
		t.Fatal("a Connecting publisher is never expired")
	}
	l.check(t0.Add(time.Second), time.Second)
	if l.expired(t0.Add(1999*time.Millisecond), time.Second) {
		t.Fatal("expired before retain passed")
	}
	if !l.expired(t0.Add(2*time.Second), time.Second) {
		t.Fatal("not expired after retain")
	}
}

func TestPublisherState_String(t *testing.T) {
	for s, want := range map[PublisherState]string{
		StateConnecting: "Connecting", StateLive: "Live", StateTimedOut: "TimedOut", 0: "PublisherState(0)",
	} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s.String(), want)
		}
	}
}
