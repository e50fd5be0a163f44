package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// goalReminderLatenessP99 is the reminders' lateness bound at the default
// scan interval (1 s): a due reminder is read at the next scan of its
// index part and delivered as a call.
const goalReminderLatenessP99 = 2 * time.Second

// remBenchState is a reminded Spot of the bench (no state of its own).
type remBenchState struct{}

// spotsReminders registers plan.remReminders durable reminders at
// plan.remPeriod over Spots of one kind hosted by three Object Servers
// (one process, each with its own connection to one real redis-server, as
// three processes would have), their first due times spread over one
// period; it measures the redis-server's commands per second (INFO
// commandstats, commands inside scripts included) while reminders are
// registered but none is due, then for plan.remWindow while they fire
// (each firing activates its Spot: the claim is part of the cost), and the
// lateness of each firing after its due time.
func spotsReminders(ctx context.Context, w io.Writer, plan spotsPlan) error {
	addr, stopRedis, err := startScaleRedis()
	if err != nil {
		return fmt.Errorf("reminders: %w", err)
	}
	defer stopRedis()
	var counting atomic.Bool
	var mu sync.Mutex
	lat := make([]time.Duration, 0, plan.remReminders*2)
	kind := func() *spot.Kind[remBenchState] {
		return spot.NewKind("alarm", func(string) *remBenchState { return &remBenchState{} }).
			OnReminder(func(_ *spot.Context, _ *remBenchState, r spot.Reminder) error {
				if counting.Load() {
					d := time.Since(r.Due)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
				return nil
			})
	}
	var nodes []*routemesh.Node
	var hosts []*zlink.Host
	defer func() {
		for _, h := range hosts {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = h.Stop(sctx)
			cancel()
		}
	}()
	for i := range 3 {
		store, err := location.NewRedis(ctx, location.RedisConfig{Addr: addr})
		if err != nil {
			return fmt.Errorf("reminders: store: %w", err)
		}
		defer store.Close()
		o := zlink.NewOptions().SetLocationStore(store).SetLogger(zerolog.Nop())
		b := o.AddRouteMesh(spotsMesh).SetRoutingIDPrefix(fmt.Sprintf("rem%d", i)).SetObjectRole(routemesh.ObjectServer)
		spot.Enable(b, kind())
		h, err := zlink.Start(ctx, o)
		if err != nil {
			return fmt.Errorf("reminders: start: %w", err)
		}
		hosts = append(hosts, h)
		nodes = append(nodes, h.Mesh(spotsMesh))
	}
	for _, n := range nodes {
		if err := n.WaitPeers(ctx, len(nodes)-1); err != nil {
			return fmt.Errorf("reminders: peers: %w", err)
		}
		if err := spot.WaitReady(ctx, n); err != nil {
			return err
		}
	}

	// Register: first due times spread over one period, starting once the
	// registrations (and an idle measurement) are surely done.
	n, period := plan.remReminders, plan.remPeriod
	t0 := time.Now()
	first := t0.Add(plan.remLead)
	var next atomic.Int64
	var regErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				due := first.Add(time.Duration(int64(period) * int64(i) / int64(n)))
				if err := spot.RegisterReminder(ctx, nodes[i%3], "alarm", fmt.Sprintf("a-%06d", i),
					spot.Reminder{Name: "end", Due: due, Period: period}); err != nil {
					errOnce.Do(func() { regErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if regErr != nil {
		return fmt.Errorf("reminders: register: %w", regErr)
	}
	reg := time.Since(t0)
	fmt.Fprintf(w, "reminders servers=3 reminders=%d period=%v registered in %v (%.0f/s), first due %v after the start\n",
		n, period, reg.Round(time.Millisecond), float64(n)/reg.Seconds(), plan.remLead)
	idleEnd := first.Add(-100 * time.Millisecond)
	idleStart := idleEnd.Add(-plan.remIdle)
	if time.Now().After(idleStart) {
		fmt.Fprintf(w, "reminders idle: registering took past the idle window; not measured\n")
	} else {
		if err := sleepCtx(ctx, time.Until(idleStart)); err != nil {
			return err
		}
		l0, err := locationtest.ReadLoad(addr)
		if err != nil {
			return err
		}
		if err := sleepCtx(ctx, time.Until(idleEnd)); err != nil {
			return err
		}
		l1, err := locationtest.ReadLoad(addr)
		if err != nil {
			return err
		}
		d := l1.Sub(l0)
		secs := l1.At.Sub(l0.At).Seconds()
		fmt.Fprintf(w, "reminders idle (%d registered, none due): redis %.1f commands/s in all (%.1f zrangebyscore/s: %d index parts read once a second), 3 servers\n",
			n, float64(d.Commands())/secs, float64(d.Calls["zrangebyscore"])/secs, location.ReminderParts)
	}

	// Fire: measure a window inside the first period.
	if err := sleepCtx(ctx, time.Until(first)); err != nil {
		return err
	}
	st0 := remStats(nodes)
	l0, err := locationtest.ReadLoad(addr)
	if err != nil {
		return err
	}
	counting.Store(true)
	if err := sleepCtx(ctx, plan.remWindow); err != nil {
		return err
	}
	counting.Store(false)
	l1, err := locationtest.ReadLoad(addr)
	if err != nil {
		return err
	}
	st1 := remStats(nodes)
	d, secs := l1.Sub(l0), l1.At.Sub(l0.At).Seconds()
	fired := st1.Fired - st0.Fired
	want := float64(n) * plan.remWindow.Seconds() / period.Seconds()
	mu.Lock()
	got := slices.Clone(lat)
	mu.Unlock()
	slices.Sort(got)
	q := func(p float64) time.Duration {
		if len(got) == 0 {
			return 0
		}
		return got[min(int(p*float64(len(got))), len(got)-1)]
	}
	perFiring := 0.0
	if fired > 0 {
		perFiring = float64(d.Commands()) / float64(fired)
	}
	fmt.Fprintf(w, "reminders window=%v firings %d (%.0f%% of due) redis %.0f commands/s (%.1f per firing, claims of the activations included; evalsha %.0f/s, zrangebyscore %.1f/s)  lateness p50 %v p99 %v\n",
		plan.remWindow, fired, 100*float64(fired)/max(want, 1), float64(d.Commands())/secs, perFiring,
		float64(d.Calls["evalsha"])/secs, float64(d.Calls["zrangebyscore"])/secs,
		q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond))
	if st1.DeliveryErrors > st0.DeliveryErrors {
		fmt.Fprintf(w, "reminders: %d deliveries ended with an error (delivered again at a later scan)\n", st1.DeliveryErrors-st0.DeliveryErrors)
	}
	fmt.Fprintf(w, "goal reminders lateness p99 <= %v at %d reminders / %v: %v, %s\n", goalReminderLatenessP99, n, period,
		q(0.99).Round(time.Millisecond), spotsVerdict(len(got) > 0 && q(0.99) <= goalReminderLatenessP99))
	if fired == 0 {
		return errors.New("reminders: none fired in the window")
	}
	return nil
}

// remStats sums the reminder counts of nodes.
func remStats(nodes []*routemesh.Node) spot.ReminderStats {
	var out spot.ReminderStats
	for _, n := range nodes {
		st, err := spot.StatsOf(n)
		if err != nil {
			continue
		}
		r := st.Reminders
		out.Fired += r.Fired
		out.Errors += r.Errors
		out.Scans += r.Scans
		out.Delivered += r.Delivered
		out.DeliveryErrors += r.DeliveryErrors
	}
	return out
}
