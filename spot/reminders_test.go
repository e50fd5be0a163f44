package spot_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// firing is one run of a reminder handler.
type firing struct {
	id, name, rid string
	epoch         uint64
	due           time.Time
}

// firings records every reminder handler run of a test.
type firings struct {
	mu  sync.Mutex
	all []firing
}

func (f *firings) add(x firing) {
	f.mu.Lock()
	f.all = append(f.all, x)
	f.mu.Unlock()
}

// of returns the firings of (id, name).
func (f *firings) of(id, name string) []firing {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []firing
	for _, x := range f.all {
		if x.id == id && x.name == name {
			out = append(out, x)
		}
	}
	return out
}

// noneTwice fails when a due time of a reminder fired twice within one
// owner epoch.
func (f *firings) noneTwice(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	for _, x := range f.all {
		k := fmt.Sprintf("%s/%s/%d/%d", x.id, x.name, x.due.UnixMilli(), x.epoch)
		if seen[k] {
			t.Fatalf("reminder %s of %s fired twice for due %v in epoch %d", x.name, x.id, x.due, x.epoch)
		}
		seen[k] = true
	}
}

type remArm struct {
	Name     string
	DueMs    int64 // from now
	PeriodMs int64
}

var (
	remArmP    = wire.NewPacket[remArm, struct{}]("rem-arm")
	disremArmP = wire.NewPacket[string, bool]("rem-disarm")
	remListP   = wire.NewPacket[struct{}, []string]("rem-list")
)

type alarm struct{ Fired int }

// holdIn and holdOut hold the handler of a reminder named "hold" until
// the test lets it go.
var holdIn, holdOut = make(chan struct{}, 1), make(chan struct{})

func alarmKind(f *firings, idle time.Duration) *spot.Kind[alarm] {
	k := spot.NewKind("alarm", func(string) *alarm { return &alarm{} })
	spot.On(k, remArmP, func(c *spot.Context, _ *alarm, a remArm) (struct{}, error) {
		return struct{}{}, c.RegisterReminder(spot.Reminder{Name: a.Name, Due: time.Now().Add(time.Duration(a.DueMs) * time.Millisecond),
			Period: time.Duration(a.PeriodMs) * time.Millisecond, Payload: []byte(a.Name)})
	})
	spot.On(k, disremArmP, func(c *spot.Context, _ *alarm, name string) (bool, error) { return c.CancelReminder(name) })
	spot.On(k, remListP, func(c *spot.Context, _ *alarm, _ struct{}) ([]string, error) {
		rs, err := c.Reminders()
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out, err
	})
	k.OnReminder(func(c *spot.Context, s *alarm, r spot.Reminder) error {
		if c.Source != spot.SourceReminder || string(r.Payload) != r.Name {
			return fmt.Errorf("source %q payload %q", c.Source, r.Payload)
		}
		s.Fired++
		f.add(firing{id: c.ID, name: r.Name, rid: c.Node.RID(), epoch: c.Epoch, due: r.Due})
		switch {
		case r.Name == "hold":
			holdIn <- struct{}{}
			<-holdOut
		case r.Name == "boom":
			panic("boom")
		case r.Name == "fail-once" && len(f.of(c.ID, r.Name)) == 1:
			return errors.New("not now")
		}
		return nil
	})
	k.SetIdleTimeout(idle)
	k.Persist(spot.Persistence{Version: 1}) // movable
	return k
}

// reminderStores runs fn on the in-memory store and on a real
// redis-server.
func reminderStores(t *testing.T, fn func(t *testing.T, store location.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, location.NewMemory()) })
	t.Run("redis", func(t *testing.T) {
		srv := locationtest.StartRedis(t)
		s, err := location.NewRedis(ctxT(t, 10*time.Second), location.RedisConfig{Addr: srv.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		fn(t, s)
	})
}

var remSpots = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond, ReminderScan: 50 * time.Millisecond}

// A reminder registered from outside fires on a Spot that was never
// active (the firing activates it), goes on firing after its Spot idled
// out, and never fires twice for one due time within an owner epoch.
func TestReminder_FiresWhileInactive(t *testing.T) {
	defer spot.SetMinReminderPeriod(time.Millisecond)()
	reminderStores(t, func(t *testing.T, store location.Store) {
		f := &firings{}
		var servers []*routemesh.Node
		for i := range 2 {
			_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer,
				kinds: []spot.Registration{alarmKind(f, 50*time.Millisecond)}, cfg: &remSpots})
			servers = append(servers, s)
		}
		_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient, cfg: &remSpots})
		waitSpots(t, append(servers, cl)...)
		ctx := ctxT(t, 60*time.Second)

		if err := spot.RegisterReminder(ctx, cl, "alarm", "A", spot.Reminder{Name: "tick", Period: 300 * time.Millisecond, Payload: []byte("tick")}); err != nil {
			t.Fatal(err)
		}
		list, err := spot.Reminders(ctx, cl, "alarm", "A")
		if err != nil || len(list) != 1 || list[0].Name != "tick" || list[0].Period != 300*time.Millisecond {
			t.Fatalf("list: %+v %v", list, err)
		}
		// The idle timeout (50 ms) is shorter than the period: every
		// firing finds the Spot inactive.
		acts := func() int {
			n := 0
			for _, s := range servers {
				st, _ := spot.StatsOf(s)
				for _, k := range st.Kinds {
					n += int(k.Activations)
				}
			}
			return n
		}
		waitFor(t, "3 firings, and firings that found the Spot inactive", 20*time.Second, func() bool {
			return len(f.of("A", "tick")) >= 3 && acts() >= 2
		})

		f.noneTwice(t)
	})
}

// A reminder follows its Spot's move: the next firings run on the new
// owner, in a later epoch.
func TestReminder_FollowsAMove(t *testing.T) {
	defer spot.SetMinReminderPeriod(time.Millisecond)()
	reminderStores(t, func(t *testing.T, store location.Store) {
		f := &firings{}
		var servers []*routemesh.Node
		for i := range 2 {
			_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer,
				kinds: []spot.Registration{alarmKind(f, time.Minute)}, cfg: &remSpots})
			servers = append(servers, s)
		}
		waitSpots(t, servers...)
		ctx := ctxT(t, 60*time.Second)
		_, res, err := spot.CallRaw(ctx, servers[0], "alarm", "A", remArmP.Name(), mustEnc(t, remArmP, remArm{Name: "tick", DueMs: 100, PeriodMs: 200}))
		if err != nil {
			t.Fatal(err)
		}
		from, to := servers[0], servers[1]
		if res.Owner != from.RID() {
			from, to = to, from
		}
		waitFor(t, "a firing on the first owner", 20*time.Second, func() bool { return len(f.of("A", "tick")) >= 1 })
		if err := spot.Move(ctx, from, "alarm", "A", to.RID()); err != nil {
			t.Fatalf("move: %v", err)
		}
		n := len(f.of("A", "tick"))
		waitFor(t, "two firings after the move", 20*time.Second, func() bool { return len(f.of("A", "tick")) >= n+2 })
		all := f.of("A", "tick")
		last := all[len(all)-1]
		if last.rid != to.RID() || last.epoch <= all[0].epoch {
			t.Fatalf("after the move the reminder fired on %s epoch %d (first on %s epoch %d), want %s", last.rid, last.epoch, all[0].rid, all[0].epoch, to.RID())
		}
		f.noneTwice(t)
	})
}

// A reminder cancelled before its due time never fires: neither from
// outside nor from its Spot's turn; a stale Context cannot register.
func TestReminder_CancelledNeverFires(t *testing.T) {
	defer spot.SetMinReminderPeriod(time.Millisecond)()
	reminderStores(t, func(t *testing.T, store location.Store) {
		f := &firings{}
		_, s := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer,
			kinds: []spot.Registration{alarmKind(f, time.Minute)}, cfg: &remSpots})
		waitSpots(t, s)
		ctx := ctxT(t, 60*time.Second)

		// From a turn: armed, listed, disarmed.
		if _, err := spot.Call(ctx, s, "alarm", "B", remArmP, remArm{Name: "in-turn", DueMs: 300, PeriodMs: 100}); err != nil {
			t.Fatal(err)
		}
		names, err := spot.Call(ctx, s, "alarm", "B", remListP, struct{}{})
		if err != nil || len(names) != 1 || names[0] != "in-turn" {
			t.Fatalf("list in a turn: %v %v", names, err)
		}
		if ok, err := spot.Call(ctx, s, "alarm", "B", disremArmP, "in-turn"); err != nil || !ok {
			t.Fatalf("disarm: %v %v", ok, err)
		}
		// From outside.
		if err := spot.RegisterReminder(ctx, s, "alarm", "C", spot.Reminder{Name: "outside", Due: time.Now().Add(300 * time.Millisecond), Payload: []byte("outside")}); err != nil {
			t.Fatal(err)
		}
		if ok, err := spot.CancelReminder(ctx, s, "alarm", "C", "outside"); err != nil || !ok {
			t.Fatalf("cancel: %v %v", ok, err)
		}
		// A control that is not cancelled fires: the scans ran past the
		// others' due times.
		if err := spot.RegisterReminder(ctx, s, "alarm", "D", spot.Reminder{Name: "control", Due: time.Now().Add(300 * time.Millisecond), Payload: []byte("control")}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the control firing", 20*time.Second, func() bool { return len(f.of("D", "control")) == 1 })
		st, _ := spot.StatsOf(s)
		scans := st.Reminders.Scans
		waitFor(t, "more scans", 20*time.Second, func() bool {
			st, _ := spot.StatsOf(s)
			return st.Reminders.Scans >= scans+2*location.ReminderParts
		})
		if n := len(f.of("B", "in-turn")) + len(f.of("C", "outside")); n != 0 {
			t.Fatalf("%d firings of cancelled reminders", n)
		}
		// A one-shot is gone after its firing.
		if l, err := spot.Reminders(ctx, s, "alarm", "D"); err != nil || len(l) != 0 {
			t.Fatalf("a fired one-shot is still listed: %+v %v", l, err)
		}
		// Bad reminders are ErrConfig.
		for _, bad := range []spot.Reminder{{Name: ""}, {Name: "x"}, {Name: "x", Period: -time.Second}} {
			if err := spot.RegisterReminder(ctx, s, "alarm", "E", bad); !errors.Is(err, spot.ErrConfig) {
				t.Fatalf("register %+v: %v", bad, err)
			}
		}
	})
}

// The public minimum period is a second.
func TestReminder_MinimumPeriod(t *testing.T) {
	store := location.NewMemory()
	_, s := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{alarmKind(&firings{}, time.Minute)}, cfg: &remSpots})
	waitSpots(t, s)
	err := spot.RegisterReminder(ctxT(t, 10*time.Second), s, "alarm", "M", spot.Reminder{Name: "fast", Period: 999 * time.Millisecond})
	if !errors.Is(err, spot.ErrConfig) {
		t.Fatalf("a 999ms period: %v", err)
	}
	if err := spot.RegisterReminder(ctxT(t, 10*time.Second), s, "alarm", "M", spot.Reminder{Name: "ok", Period: spot.MinReminderPeriod}); err != nil {
		t.Fatal(err)
	}
}

// A handler that panicked counts as fired: the next delivery in the same
// epoch only moves the reminder on. A handler that returned an error is
// run again at a later scan.
func TestReminder_PanicFiredErrorRetried(t *testing.T) {
	defer spot.SetMinReminderPeriod(time.Millisecond)()
	store := location.NewMemory()
	f := &firings{}
	_, s := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{alarmKind(f, time.Minute)}, cfg: &remSpots})
	waitSpots(t, s)
	ctx := ctxT(t, 60*time.Second)
	for _, name := range []string{"boom", "fail-once"} {
		if err := spot.RegisterReminder(ctx, s, "alarm", "P", spot.Reminder{Name: name, Due: time.Now(), Payload: []byte(name)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both one-shots done", 20*time.Second, func() bool {
		l, err := spot.Reminders(ctx, s, "alarm", "P")
		return err == nil && len(l) == 0
	})
	if n := len(f.of("P", "boom")); n != 1 {
		t.Fatalf("a panicking handler ran %d times, want once", n)
	}
	if n := len(f.of("P", "fail-once")); n != 2 {
		t.Fatalf("a handler that failed once ran %d times, want twice", n)
	}
	st, _ := spot.StatsOf(s)
	if st.Reminders.Errors != 1 || st.Reminders.Fired != 1 {
		t.Fatalf("stats %+v: want one error, one fired (the panic is neither)", st.Reminders)
	}
}

// Every node restarted: the reminders are in the store; the new nodes
// (other RIDs, new leases) fire them, the due times missed while nobody
// ran merged into one firing each.
func TestReminder_SurvivesARestartOfEveryNode(t *testing.T) {
	defer spot.SetMinReminderPeriod(time.Millisecond)()
	srv := locationtest.StartRedis(t)
	open := func() location.Store {
		s, err := location.NewRedis(ctxT(t, 10*time.Second), location.RedisConfig{Addr: srv.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	f := &firings{}
	var gen1 []*routemesh.Node
	var hosts1 []interface{ Stop(contextT) error }
	for i := range 2 {
		h, s := startNode(t, open(), fmt.Sprintf("a%d", i), nodeOpts{role: routemesh.ObjectServer,
			kinds: []spot.Registration{alarmKind(f, time.Minute)}, cfg: &remSpots})
		gen1, hosts1 = append(gen1, s), append(hosts1, h)
	}
	waitSpots(t, gen1...)
	ctx := ctxT(t, 60*time.Second)
	for _, id := range []string{"R1", "R2", "R3"} {
		if err := spot.RegisterReminder(ctx, gen1[0], "alarm", id, spot.Reminder{Name: "tick", Period: 200 * time.Millisecond, Payload: []byte("tick")}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every reminder firing", 20*time.Second, func() bool {
		return len(f.of("R1", "tick")) > 0 && len(f.of("R2", "tick")) > 0 && len(f.of("R3", "tick")) > 0
	})
	for _, h := range hosts1 {
		if err := h.Stop(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	stopped := time.Now()
	// Down for several periods: the due times missed meanwhile must merge.
	time.Sleep(5 * 200 * time.Millisecond)
	var gen2 []*routemesh.Node
	for i := range 2 {
		_, s := startNode(t, open(), fmt.Sprintf("b%d", i), nodeOpts{role: routemesh.ObjectServer,
			kinds: []spot.Registration{alarmKind(f, time.Minute)}, cfg: &remSpots})
		gen2 = append(gen2, s)
	}
	waitSpots(t, gen2...)
	isNew := map[string]bool{gen2[0].RID(): true, gen2[1].RID(): true}
	for _, id := range []string{"R1", "R2", "R3"} {
		waitFor(t, id+" firing on a new node", 20*time.Second, func() bool {
			for _, x := range f.of(id, "tick") {
				if isNew[x.rid] && x.due.After(stopped.Add(-time.Second)) {
					return true
				}
			}
			return false
		})
	}
	var merged uint64
	for _, n := range gen2 {
		st, _ := spot.StatsOf(n)
		merged += st.Reminders.Merged
	}
	if merged == 0 {
		t.Fatal("no due time missed during the restart was merged")
	}
	f.noneTwice(t)
}

// A cancel racing a firing: cancelled from outside while its handler runs,
// the firing finishes, its write finds the reminder gone and writes
// nothing, and it never fires again.
func TestReminder_CancelDuringAFiring(t *testing.T) {
	defer spot.SetMinReminderPeriod(time.Millisecond)()
	reminderStores(t, func(t *testing.T, store location.Store) {
		f := &firings{}
		_, s := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{alarmKind(f, time.Minute)}, cfg: &remSpots})
		waitSpots(t, s)
		ctx := ctxT(t, 60*time.Second)
		if err := spot.RegisterReminder(ctx, s, "alarm", "H", spot.Reminder{Name: "hold", Period: 100 * time.Millisecond, Payload: []byte("hold")}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-holdIn:
		case <-ctx.Done():
			t.Fatal("the reminder did not fire")
		}
		if ok, err := spot.CancelReminder(ctx, s, "alarm", "H", "hold"); err != nil || !ok {
			t.Fatalf("cancel: %v %v", ok, err)
		}
		holdOut <- struct{}{}
		st, _ := spot.StatsOf(s)
		scans := st.Reminders.Scans
		waitFor(t, "more scans", 20*time.Second, func() bool {
			st, _ := spot.StatsOf(s)
			return st.Reminders.Scans >= scans+3*location.ReminderParts
		})
		if n := len(f.of("H", "hold")); n != 1 {
			t.Fatalf("a reminder cancelled during its firing fired %d times, want the one", n)
		}
		if l, err := spot.Reminders(ctx, s, "alarm", "H"); err != nil || len(l) != 0 {
			t.Fatalf("the firing's write brought it back: %+v %v", l, err)
		}
	})
}
