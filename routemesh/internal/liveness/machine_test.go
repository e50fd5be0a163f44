package liveness

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestConfig_Validate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	d := DefaultConfig()
	if d.Interval != 500*time.Millisecond || d.MaxGap != 5 || d.LastHeard != 3*time.Second {
		t.Fatalf("DefaultConfig = %+v", d)
	}
	bad := []Config{
		{Interval: 0, MaxGap: 5, LastHeard: time.Second},
		{Interval: -time.Second, MaxGap: 5, LastHeard: time.Second},
		{Interval: time.Second, MaxGap: 0, LastHeard: time.Second},
		{Interval: time.Second, MaxGap: 5, LastHeard: time.Second - 1},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", c, err)
		}
		func() {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("New(%+v) panic = %v", c, err)
				}
			}()
			New(c, t0)
		}()
	}
}

// driver ticks the machine only at the times it asks for, sends every
// heartbeat it is asked for (unless blocked), and lets the test inject
// frames from the peer at chosen times.
type driver struct {
	m       *Machine
	now     time.Time
	next    time.Time
	sent    int
	blocked bool // the send path is stuck: heartbeats are never sent
	out     Output
}

func newDriver(cfg Config) *driver {
	d := &driver{m: New(cfg, t0), now: t0, next: t0}
	return d
}

// step advances to the next requested tick and runs it.
func (d *driver) step() Output {
	if d.next.Before(d.now) {
		panic("Next in the past")
	}
	d.now = d.next
	d.out = d.m.Tick(d.now)
	if d.out.SendHeartbeat && !d.blocked {
		d.sent++
		d.m.HeartbeatSent(d.now)
	}
	d.next = d.out.Next
	return d.out
}

func (d *driver) runUntilLost(t *testing.T, limit time.Duration, onStep func()) Output {
	t.Helper()
	for d.now.Sub(t0) <= limit {
		if out := d.step(); out.Lost {
			return out
		}
		if onStep != nil {
			onStep()
		}
	}
	t.Fatalf("not lost within %v (gap %d, sent %d)", limit, d.m.Gap(), d.sent)
	return Output{}
}

func TestSymmetricLoss_DetectedAfterMaxGapPlusOneBeats(t *testing.T) {
	for _, maxGap := range []int{1, 3, 5} {
		cfg := Config{Interval: 500 * time.Millisecond, MaxGap: maxGap, LastHeard: time.Hour}
		d := newDriver(cfg)
		out := d.runUntilLost(t, time.Minute, nil)
		if out.Reason != GapExceeded || d.sent != maxGap+1 {
			t.Fatalf("maxGap %d: lost %v after %d beats, want %v after %d", maxGap, out.Reason, d.sent, GapExceeded, maxGap+1)
		}
		if want := t0.Add(time.Duration(maxGap+1) * cfg.Interval); !d.now.Equal(want) {
			t.Fatalf("maxGap %d: lost at %v, want %v", maxGap, d.now.Sub(t0), want.Sub(t0))
		}
	}
}

// We still receive the peer's other frames (it is alive and talking), but
// none of its heartbeats reach us: only the gap counter sees it.
func TestAsymmetricLoss_FramesButNoHeartbeats(t *testing.T) {
	d := newDriver(DefaultConfig())
	out := d.runUntilLost(t, time.Minute, func() {
		d.m.FrameReceived(d.now.Add(time.Millisecond))
	})
	if out.Reason != GapExceeded || d.sent != 6 {
		t.Fatalf("lost %v after %d beats, want gap exceeded after 6", out.Reason, d.sent)
	}
}

// We hear nothing at all and cannot even send (stuck send path): the gap
// never grows, and last-heard is what notices.
func TestAsymmetricLoss_SilentPeer(t *testing.T) {
	d := newDriver(DefaultConfig())
	d.m.HeartbeatReceived(t0.Add(200 * time.Millisecond))
	d.blocked = true
	out := d.runUntilLost(t, time.Minute, nil)
	if out.Reason != Silent || d.m.Gap() != 0 {
		t.Fatalf("lost %v with gap %d, want silent with gap 0", out.Reason, d.m.Gap())
	}
	if want := t0.Add(200*time.Millisecond + 3*time.Second); !d.now.Equal(want) {
		t.Fatalf("lost at %v, want %v", d.now.Sub(t0), want.Sub(t0))
	}
}

func TestSilentWithLargeGapAllowance(t *testing.T) {
	cfg := Config{Interval: 500 * time.Millisecond, MaxGap: 100, LastHeard: 2 * time.Second}
	d := newDriver(cfg)
	out := d.runUntilLost(t, time.Minute, nil)
	if out.Reason != Silent || !d.now.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("lost %v at %v, want silent at 2s", out.Reason, d.now.Sub(t0))
	}
}

func TestLostIsSticky(t *testing.T) {
	d := newDriver(Config{Interval: time.Second, MaxGap: 1, LastHeard: time.Hour})
	first := d.runUntilLost(t, time.Minute, nil)
	d.m.HeartbeatReceived(d.now)
	d.m.HeartbeatReceived(d.now)
	d.m.FrameReceived(d.now)
	for i := range 3 {
		out := d.m.Tick(d.now.Add(time.Duration(i) * time.Second))
		if !out.Lost || out.SendHeartbeat || out.Reason != first.Reason || !out.Next.IsZero() {
			t.Fatalf("tick %d after loss: %+v", i, out)
		}
	}
}

func TestGapCounter(t *testing.T) {
	m := New(DefaultConfig(), t0)
	m.HeartbeatReceived(t0)
	m.HeartbeatReceived(t0)
	if m.Gap() != 0 {
		t.Fatalf("gap %d, want floor 0", m.Gap())
	}
	for range 3 {
		m.HeartbeatSent(t0)
	}
	m.HeartbeatReceived(t0)
	m.FrameReceived(t0)
	if m.Gap() != 2 {
		t.Fatalf("gap %d, want 2", m.Gap())
	}
}

func TestTick_SchedulesNextHeartbeatAndDeadline(t *testing.T) {
	m := New(DefaultConfig(), t0)
	out := m.Tick(t0)
	if !out.SendHeartbeat || !out.Next.Equal(t0.Add(500*time.Millisecond)) {
		t.Fatalf("first tick: %+v", out)
	}
	m.HeartbeatSent(t0)
	if out := m.Tick(t0.Add(100 * time.Millisecond)); out.SendHeartbeat || !out.Next.Equal(t0.Add(500*time.Millisecond)) {
		t.Fatalf("early tick: %+v", out)
	}
	// An unsent heartbeat is asked for again at the next tick.
	if out := m.Tick(t0.Add(600 * time.Millisecond)); !out.SendHeartbeat {
		t.Fatalf("due tick: %+v", out)
	}
	if out := m.Tick(t0.Add(700 * time.Millisecond)); !out.SendHeartbeat {
		t.Fatalf("heartbeat not sent, tick again: %+v", out)
	}
	// The silence deadline caps Next.
	m2 := New(Config{Interval: time.Second, MaxGap: 5, LastHeard: 1500 * time.Millisecond}, t0)
	m2.Tick(t0)
	m2.HeartbeatSent(t0)
	m2.Tick(t0.Add(time.Second))
	m2.HeartbeatSent(t0.Add(time.Second))
	if out := m2.Tick(t0.Add(1200 * time.Millisecond)); !out.Next.Equal(t0.Add(1500 * time.Millisecond)) {
		t.Fatalf("Next = %v, want the silence deadline 1.5s", out.Next.Sub(t0))
	}
	// Out-of-order timestamps never move last-heard backwards.
	m2.FrameReceived(t0.Add(1400 * time.Millisecond))
	m2.FrameReceived(t0.Add(100 * time.Millisecond))
	if out := m2.Tick(t0.Add(2800 * time.Millisecond)); out.Lost {
		t.Fatalf("last-heard moved backwards: %+v", out)
	}
}

func TestLostReasonString(t *testing.T) {
	if GapExceeded.String() != "gap exceeded" || Silent.String() != "silent" || LostReason(0).String() != "lost-reason(0)" {
		t.Fatal("LostReason strings")
	}
}

// Both ends of a connection must beat at the same interval: a machine at
// the default 500 ms whose peer beats every second sends two heartbeats
// per answer, so its gap grows by one a second and the peer is lost for
// the gap (not for silence) after about MaxGap seconds
// (docs/operations.md, "Sizing").
func TestMachine_PeerAtHalfTheRateIsLostForTheGap(t *testing.T) {
	cfg := DefaultConfig()
	m := New(cfg, t0)
	var lostAt time.Duration
	for k := 0; k <= 40 && lostAt == 0; k++ {
		now := t0.Add(time.Duration(k) * cfg.Interval)
		if k%2 == 0 && k > 0 {
			m.HeartbeatReceived(now) // the peer's, every second
		}
		out := m.Tick(now)
		if out.Lost {
			if out.Reason != GapExceeded {
				t.Fatalf("lost for %v, want the gap", out.Reason)
			}
			lostAt = now.Sub(t0)
			break
		}
		if out.SendHeartbeat {
			m.HeartbeatSent(now)
		}
	}
	if lostAt == 0 || lostAt > time.Duration(cfg.MaxGap+2)*time.Second {
		t.Fatalf("a peer at half the rate lost at %v; want within about MaxGap (%d) seconds", lostAt, cfg.MaxGap)
	}
}
