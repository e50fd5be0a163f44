package fanout

import (
	"fmt"
	"time"
)

// heartbeatTopic is the reserved topic of publisher heartbeats. It starts
// with 0xFF so it sorts after every user topic: zmq4 resends a SUB socket's
// subscriptions in sorted order on one connection, so the first heartbeat
// heard proves every user subscription reached the publisher.
const heartbeatTopic = "\xffzlink.fanout.hb"

// reserved reports whether a topic is reserved for the package.
func reserved(topic string) bool { return len(topic) > 0 && topic[0] == 0xFF }

// PublisherState is a subscriber's view of one publisher. The zero value is
// invalid.
type PublisherState uint8

const (
	// StateConnecting: nothing heard yet from this publisher.
	StateConnecting PublisherState = 1 + iota
	// StateLive: a message or heartbeat arrived less than ReceiveTimeout ago.
	StateLive
	// StateTimedOut: nothing heard for ReceiveTimeout.
	StateTimedOut
)

func (s PublisherState) String() string {
	switch s {
	case StateConnecting:
		return "Connecting"
	case StateLive:
		return "Live"
	case StateTimedOut:
		return "TimedOut"
	default:
		return fmt.Sprintf("PublisherState(%d)", uint8(s))
	}
}

// liveness is the per-publisher liveness machine. It does no I/O and reads
// no clock: every input carries now. Not safe for concurrent use.
type liveness struct {
	state    PublisherState
	since    time.Time // creation, or the last time something was heard
	last     time.Time // last message or heartbeat; zero if none
	timedOut time.Time // when the state became TimedOut
	received uint64    // messages and heartbeats heard
}

func newLiveness(now time.Time) liveness {
	return liveness{state: StateConnecting, since: now}
}

// heard records a message or heartbeat at now.
func (l *liveness) heard(now time.Time) {
	l.received++
	l.last = now
	l.since = now
	l.state = StateLive
}

// check moves to TimedOut when nothing was heard for timeout since
// creation or the last message; it reports whether it did.
func (l *liveness) check(now time.Time, timeout time.Duration) bool {
	if l.state == StateTimedOut || now.Sub(l.since) < timeout {
		return false
	}
	l.state = StateTimedOut
	l.timedOut = now
	return true
}

// expired reports whether the publisher has been TimedOut for at least
// retain (used to drop withdrawn publishers).
func (l *liveness) expired(now time.Time, retain time.Duration) bool {
	return l.state == StateTimedOut && now.Sub(l.timedOut) >= retain
}
