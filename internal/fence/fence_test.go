package fence

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Unix(1000, 0)

func cfg() Config {
	return Config{TTL: 6 * time.Second, RenewEvery: time.Second, Rho: 0.01, Margin: 500 * time.Millisecond}
}

func TestConfig_Validate(t *testing.T) {
	for name, c := range map[string]Config{
		"ttl below 3 renewals + margin": {TTL: 3 * time.Second, RenewEvery: time.Second, Margin: time.Millisecond},
		"no renewal period":             {TTL: 3 * time.Second},
		"negative margin":               {TTL: 6 * time.Second, RenewEvery: time.Second, Margin: -1},
		"drift too large":               {TTL: 6 * time.Second, RenewEvery: time.Second, Rho: 0.2},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{TTL: 3500 * time.Millisecond, RenewEvery: time.Second, Margin: 500 * time.Millisecond}).Validate(); err != nil {
		t.Fatalf("TTL exactly 3 × renew + margin: %v", err)
	}
}

func TestLease_DeadlineCountsOnlyAcknowledgedWrites(t *testing.T) {
	l := NewLease(cfg())
	if l.Valid(t0) {
		t.Fatal("valid before any acknowledged write")
	}
	tok := l.Sent(t0)
	if l.Valid(t0.Add(time.Millisecond)) {
		t.Fatal("valid before the acknowledgement")
	}
	l.Acked(tok)
	// Deadline from the time the write was SENT: 6 s × 0.99 − 0.5 s.
	want := t0.Add(5940 * time.Millisecond).Add(-500 * time.Millisecond)
	if !l.Deadline().Equal(want) {
		t.Fatalf("deadline %v, want %v", l.Deadline().Sub(t0), want.Sub(t0))
	}
	if !l.Valid(want.Add(-time.Nanosecond)) || l.Valid(want) {
		t.Fatal("Valid must hold strictly before the deadline")
	}
	// A renewal that is never acknowledged does not extend it.
	l.Sent(t0.Add(time.Second))
	if !l.Deadline().Equal(want) {
		t.Fatal("an unacknowledged renewal moved the deadline")
	}
	// An older write acknowledged late never moves it backwards.
	old := l.Sent(t0.Add(2 * time.Second))
	newer := l.Sent(t0.Add(3 * time.Second))
	l.Acked(newer)
	d := l.Deadline()
	l.Acked(old)
	if !l.Deadline().Equal(d) {
		t.Fatal("a late acknowledgement of an older write moved the deadline")
	}
}

func TestLease_RefusedIsForGood(t *testing.T) {
	l := NewLease(cfg())
	tok := l.Sent(t0)
	l.Acked(tok)
	pending := l.Sent(t0.Add(time.Second))
	l.Refused()
	l.Acked(pending)
	if l.Valid(t0.Add(time.Second)) {
		t.Fatal("valid after a refused renewal")
	}
	l.Acked(l.Sent(t0.Add(2 * time.Second)))
	if l.Valid(t0.Add(2 * time.Second)) {
		t.Fatal("a refused lease came back")
	}
}

// The deadline never passes the store-side expiry of the last
// acknowledged write, for any drift within Rho and any acknowledgement
// order: an owner acting while Valid acts before the store can let
// anyone else claim (with Margin to spare for a pause after the check).
func TestLease_DeadlineBeforeStoreExpiry(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := cfg()
		l := NewLease(c)
		drift := rapid.Float64Range(-c.Rho, c.Rho).Draw(t, "node drift")
		local := func(trueT time.Duration) time.Time { return t0.Add(time.Duration(float64(trueT) * (1 + drift))) }
		var lastExpiry time.Duration // true time the store lets the last acknowledged key expire
		now := time.Duration(0)
		for range rapid.IntRange(1, 20).Draw(t, "writes") {
			now += time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "gap"))
			tok := l.Sent(local(now))
			if rapid.Bool().Draw(t, "acked") {
				// The store applies it a little later, with its own drift.
				applied := now + time.Duration(rapid.Int64Range(0, int64(100*time.Millisecond)).Draw(t, "latency"))
				// The shard's clock runs within Rho of the node's.
				rel := rapid.Float64Range(-c.Rho, c.Rho).Draw(t, "shard drift relative to the node")
				shardRate := (1 + drift) * (1 + rel)
				exp := applied + time.Duration(float64(c.TTL)/shardRate)
				lastExpiry = max(lastExpiry, exp)
				l.Acked(tok)
			}
		}
		if l.Deadline().IsZero() {
			return
		}
		// The true time of the local deadline, and of the latest act a
		// check just before it allows: a pause of up to Margin on the
		// node's clock.
		deadlineTrue := time.Duration(float64(l.Deadline().Sub(t0)) / (1 + drift))
		lastAct := deadlineTrue + time.Duration(float64(c.Margin)/(1+drift))
		if lastAct > lastExpiry+time.Microsecond {
			t.Fatalf("an act at %v (deadline %v + a pause of Margin) passes the store expiry %v", lastAct, deadlineTrue, lastExpiry)
		}
	})
}

func TestPlanClaim(t *testing.T) {
	me := Holder{RID: "a", Gen: 7}
	other := Holder{RID: "b", Gen: 3}
	for name, tc := range map[string]struct {
		rec       Record
		owner     OwnerState
		persisted uint64
		want      Plan
	}{
		"unowned, never claimed": {Record{}, Unknown, 0,
			Plan{Step: CompareAndSet, Expect: Record{}, New: Record{Holder: me, Epoch: 1}}},
		"released keeps its epoch": {Record{Epoch: 4}, Unknown, 0,
			Plan{Step: CompareAndSet, Expect: Record{Epoch: 4}, New: Record{Holder: me, Epoch: 5}}},
		"persisted state is newer than the record (record lost)": {Record{}, Unknown, 9,
			Plan{Step: CompareAndSet, Expect: Record{}, New: Record{Holder: me, Epoch: 10}}},
		"already mine": {Record{Holder: me, Epoch: 2}, Unknown, 0, Plan{Step: Mine, Owner: me}},
		"another owner, not checked yet": {Record{Holder: other, Epoch: 2}, Unknown, 0,
			Plan{Step: CheckOwner, Owner: other}},
		"another live owner keeps it": {Record{Holder: other, Epoch: 2}, Live, 0,
			Plan{Step: Redirect, Owner: other}},
		"another owner whose lease is gone": {Record{Holder: other, Epoch: 2}, Gone, 0,
			Plan{Step: CompareAndSet, Expect: Record{Holder: other, Epoch: 2}, New: Record{Holder: me, Epoch: 3}}},
		"my previous generation is another owner": {Record{Holder: Holder{RID: "a", Gen: 6}, Epoch: 2}, Unknown, 0,
			Plan{Step: CheckOwner, Owner: Holder{RID: "a", Gen: 6}}},
	} {
		if got := PlanClaim(me, tc.rec, tc.owner, tc.persisted); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	r := Record{Holder: Holder{RID: "a", Gen: 1}, Epoch: 3}
	if !Matches(r, r) {
		t.Fatal("same record must match")
	}
	for _, from := range []Record{
		{Holder: Holder{RID: "a", Gen: 1}, Epoch: 2},
		{Holder: Holder{RID: "a", Gen: 2}, Epoch: 3},
		{Holder: Holder{RID: "b", Gen: 1}, Epoch: 3},
	} {
		if Matches(r, from) {
			t.Errorf("%+v matched %+v", from, r)
		}
	}
	if Matches(Record{Epoch: 3}, Record{Epoch: 3}) {
		t.Fatal("an unowned record is nobody's to release")
	}
}
