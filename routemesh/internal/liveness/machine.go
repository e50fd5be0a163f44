package liveness

import (
	"strconv"
	"time"
)

// LostReason says which staleness signal declared the peer lost.
type LostReason uint8

const (
	// GapExceeded: more than MaxGap heartbeats went unanswered.
	GapExceeded LostReason = 1 + iota
	// Silent: nothing at all was heard for LastHeard.
	Silent
)

// String returns "gap exceeded" or "silent".
func (r LostReason) String() string {
	switch r {
	case GapExceeded:
		return "gap exceeded"
	case Silent:
		return "silent"
	default:
		return "lost-reason(" + strconv.Itoa(int(r)) + ")"
	}
}

// Output is what Tick asks the driver to do.
type Output struct {
	// SendHeartbeat asks the driver to send one heartbeat now and report it
	// with HeartbeatSent. If it is not sent, the next Tick asks again.
	SendHeartbeat bool
	// Lost reports the peer lost. It stays set on every later Tick, which
	// never asks for a heartbeat again.
	Lost bool
	// Reason is set with Lost.
	Reason LostReason
	// Next is when to call Tick again; zero once the peer is lost.
	Next time.Time
}

// Machine tracks the liveness of one peer connection.
type Machine struct {
	cfg       Config
	gap       int
	lastHeard time.Time
	nextBeat  time.Time
	lost      LostReason // 0 while alive
}

// New returns the machine of a connection that became ready at now; the
// first Tick asks for a heartbeat at once. It panics with an error wrapping
// ErrInvalidConfig if cfg is invalid (check it earlier with Validate).
func New(cfg Config, now time.Time) *Machine {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Machine{cfg: cfg, lastHeard: now, nextBeat: now}
}

// Tick checks both thresholds at now and says whether a heartbeat is due.
func (m *Machine) Tick(now time.Time) Output {
	if m.lost == 0 {
		switch {
		case m.gap > m.cfg.MaxGap:
			m.lost = GapExceeded
		case !now.Before(m.silentAt()):
			m.lost = Silent
		}
	}
	if m.lost != 0 {
		return Output{Lost: true, Reason: m.lost}
	}
	send := !now.Before(m.nextBeat)
	next := m.nextBeat
	if send {
		next = now.Add(m.cfg.Interval)
	}
	if s := m.silentAt(); s.Before(next) {
		next = s
	}
	return Output{SendHeartbeat: send, Next: next}
}

func (m *Machine) silentAt() time.Time { return m.lastHeard.Add(m.cfg.LastHeard) }

// HeartbeatSent records a heartbeat sent at now: the gap grows by one and
// the next heartbeat is due one Interval later.
func (m *Machine) HeartbeatSent(now time.Time) {
	m.gap++
	m.nextBeat = now.Add(m.cfg.Interval)
}

// HeartbeatReceived records a heartbeat from the peer at now: the gap
// shrinks by one (never below 0) and the peer was heard.
func (m *Machine) HeartbeatReceived(now time.Time) {
	if m.gap > 0 {
		m.gap--
	}
	m.heard(now)
}

// FrameReceived records any other frame from the peer at now: the peer was
// heard, the gap is unchanged.
func (m *Machine) FrameReceived(now time.Time) { m.heard(now) }

func (m *Machine) heard(now time.Time) {
	if now.After(m.lastHeard) {
		m.lastHeard = now
	}
}

// Gap returns the number of heartbeats sent and not yet matched.
func (m *Machine) Gap() int { return m.gap }
