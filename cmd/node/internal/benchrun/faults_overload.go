package benchrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
	"github.com/zlink-go/zlink/test/fault"
)

// The overload scenarios: a slow consumer, a storm of large payloads,
// and a Client that stops reading its socket.

// overloadLiveness: the overload scenarios are about admission, not loss
// detection. A storm of 1 MiB requests queues megabytes ahead of the
// Client's heartbeats, and the Server answers a heartbeat only once it has
// read everything before it, which on a loaded machine can take longer
// than faultLiveness' gap.
var overloadLiveness = routemesh.LivenessConfig{Interval: 500 * time.Millisecond, MaxGap: 20, LastHeard: 10 * time.Second}

// overloadServer is a Server whose channel "echo" runs one handler at a
// time, within the given owner budgets, and whose channel "fast" echoes;
// and a Client of both. Each handler waits until hold is closed, then
// takes slow: holding the first one until a caller was refused fills the
// budget however fast this machine moves the requests.
func overloadServer(r *faultRig, msgs, bytes int64, slow time.Duration, hold <-chan struct{}) (*zlink.Host, *routemesh.Node, error) {
	o := zlink.NewOptions()
	m := o.AddRouteMesh(faultMesh).SetRoutingID("srv").ConfigureLiveness(overloadLiveness).
		ConfigureRouterSocket(routemesh.SocketConfig{MailboxMessageBudget: msgs, MailboxByteBudget: bytes})
	m.Channel("echo").Server().SetConcurrency(1).HandleRequest("echo", func(c *routemesh.Context, _ []byte) ([]byte, error) {
		select {
		case <-hold:
		case <-c.Done():
			return nil, nil
		}
		t := time.NewTimer(slow) // the handler's own work time
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.Done():
		}
		return nil, nil
	})
	m.Channel("fast").Server().HandleRequest("echo", faultEcho)
	hs, err := r.host(o)
	if err != nil {
		return nil, nil, err
	}
	oc := zlink.NewOptions()
	oc.AddRouteMesh(faultMesh).SetRoutingID("cli").ConfigureLiveness(overloadLiveness).AddPeer(hs.Mesh(faultMesh).Endpoint(), "srv").
		Channel("echo").Client().Channel("fast").Client()
	hc, err := r.host(oc)
	if err != nil {
		return nil, nil, err
	}
	cli := hc.Mesh(faultMesh)
	wctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	return hs, cli, cli.WaitPeers(wctx, 1)
}

// mailboxWatch samples the slow owner's mailbox until stop and returns
// the fullest sample (depth and bytes) against its budgets.
func mailboxWatch(hs *zlink.Host, stop <-chan struct{}) func() supervisor.MailboxStats {
	var worst supervisor.MailboxStats
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if n, ok := findTreeSuffix(hs.Tree(), "channel:echo"); ok {
				mb := n.Mailbox
				worst.MaxMessages, worst.MaxBytes = mb.MaxMessages, mb.MaxBytes
				worst.Depth, worst.Bytes = max(worst.Depth, mb.Depth), max(worst.Bytes, mb.Bytes)
			}
		}
	}()
	return func() supervisor.MailboxStats { <-done; return worst }
}

func findTreeSuffix(n supervisor.Node, suffix string) (supervisor.Node, bool) {
	if len(n.Path) >= len(suffix) && n.Path[len(n.Path)-len(suffix):] == suffix {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := findTreeSuffix(c, suffix); ok {
			return f, true
		}
	}
	return supervisor.Node{}, false
}

// overload runs callers workers with payload against the slow channel for
// d while a sequential caller uses the fast one (which must never fail),
// and checks the owner's mailbox against its budgets.
func overload(ctx context.Context, r *faultRig, out *faultOutcome, msgs, bytes int64, slow time.Duration, workers int, payload []byte, d time.Duration) error {
	hold := make(chan struct{})
	var holdOnce sync.Once
	release := func() { holdOnce.Do(func() { close(hold) }) }
	defer release()
	hs, cli, err := overloadServer(r, msgs, bytes, slow, hold)
	if err != nil {
		return err
	}
	out.base, out.heap = baseline()
	stop := make(chan struct{})
	watch := mailboxWatch(hs, stop)
	fast := fault.NewLedger(faultErrs...)
	out.extra = append(out.extra, fast)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			fast.Begin()
			_, err := cli.Call(cctx, "fast", "echo", nil)
			fast.End("", err)
			cancel()
		}
	}()
	start := time.Now()
	out.load = startFaultLoad(cli, workers, payload, 10*time.Second)
	err = waitUntil(ctx, "callers refused with ErrBusy", 10*time.Second, func() bool {
		return out.load.Failed(zlink.ErrBusy) > 0
	})
	out.detect = time.Since(start)
	release()
	if err == nil {
		err = waitUntil(ctx, "the overload's end", d+15*time.Second, func() bool { return time.Since(start) >= d })
	}
	out.load.Stop()
	close(stop)
	wg.Wait()
	worst := watch()
	if err != nil {
		return err
	}
	fa := fast.Account()
	fastErrs := fa.Ended - fa.OK
	if fastErrs > 0 {
		return fmt.Errorf("%d calls to the other channel failed during the overload", fastErrs)
	}
	if worst.Depth > worst.MaxMessages || worst.Bytes > worst.MaxBytes {
		return fmt.Errorf("the slow owner held %d messages / %d bytes, over its budgets %d / %d", worst.Depth, worst.Bytes, worst.MaxMessages, worst.MaxBytes)
	}
	endAt := time.Now()
	if err := waitUntil(ctx, "the slow channel answering after the overload", 10*time.Second, func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cli.Call(cctx, "echo", "echo", nil)
		return err == nil
	}); err != nil {
		return err
	}
	out.recover = time.Since(endAt)
	out.note = fmt.Sprintf("mailbox_max=%d/%d msgs %d/%d bytes", worst.Depth, worst.MaxMessages, worst.Bytes, worst.MaxBytes)
	return nil
}

func runSlowConsumer(ctx context.Context, r *faultRig, quick bool) (out faultOutcome, err error) {
	d := 5 * time.Second
	if quick {
		d = time.Second
	}
	// 32 callers against a 20 ms handler: arrivals about a hundred times
	// faster than it serves.
	return out, overload(ctx, r, &out, 8, 64<<20, 20*time.Millisecond, 32, nil, d)
}

func runStorm(ctx context.Context, r *faultRig, quick bool) (out faultOutcome, err error) {
	d := 5 * time.Second
	if quick {
		d = time.Second
	}
	return out, overload(ctx, r, &out, 1000, 4<<20, 5*time.Millisecond, 8, make([]byte, 1<<20), d)
}

// stopReadingLiveness never gives a silent peer up within the scenario.
var stopReadingLiveness = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 100000, LastHeard: time.Hour}

// otherLiveness is the other Clients': a lost Server noticed within a
// second, well above the Server's send timeout.
var otherLiveness = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 20, LastHeard: time.Second}

func runStopReading(ctx context.Context, r *faultRig, _ bool) (out faultOutcome, err error) {
	// The send timeout (derived from the Server's liveness: 250 ms) fails
	// the stuck Client's connection; the Server's writes to its other
	// inbound peers go on meanwhile (each pipe writes to its own
	// connection).
	o := zlink.NewOptions()
	o.AddRouteMesh(faultMesh).SetRoutingID("s").ConfigureLiveness(faultLiveness).
		ConfigureRouterSocket(routemesh.SocketConfig{SendHWM: 64}).
		Channel("echo").Server().HandleRequest("echo", faultEcho)
	hs, err := r.host(o)
	if err != nil {
		return out, err
	}
	s := hs.Mesh(faultMesh)
	proxy, err := fault.New(s.Endpoint())
	if err != nil {
		return out, err
	}
	r.onClose(proxy.Close)
	client := func(rid, endpoint string, live routemesh.LivenessConfig) (*routemesh.Node, error) {
		o := zlink.NewOptions()
		o.AddRouteMesh(faultMesh).SetRoutingID(rid).ConfigureLiveness(live).AddPeer(endpoint, "s").Channel("echo").Client()
		h, err := r.host(o)
		if err != nil {
			return nil, err
		}
		n := h.Mesh(faultMesh)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return n, n.WaitPeers(wctx, 1)
	}
	p, err := client("p", proxy.Endpoint(), stopReadingLiveness)
	if err != nil {
		return out, err
	}
	var others []*fault.Ledger
	for _, rid := range []string{"b", "c"} {
		n, err := client(rid, s.Endpoint(), otherLiveness)
		if err != nil {
			return out, err
		}
		others = append(others, startFaultLoad(n, 2, nil, time.Second))
	}
	out.base, out.heap = baseline()
	out.base -= 2 * 2 // the other Clients' callers run already
	defer func() {
		for _, l := range others {
			l.Stop()
			out.extra = append(out.extra, l)
		}
	}()
	out.load = startFaultLoad(p, 32, make([]byte, 256<<10), time.Second)
	if err := waitUntil(ctx, "every Client served", 15*time.Second, func() bool {
		return out.load.Since("s") > 20 && others[0].Since("s") > 20 && others[1].Since("s") > 20
	}); err != nil {
		return out, fmt.Errorf("%w (served p %d, b %d, c %d)", err, out.load.Since("s"), others[0].Since("s"), others[1].Since("s"))
	}
	stallAt := time.Now()
	proxy.CutDown() // p reads nothing more
	for _, l := range others {
		l.Mark()
	}
	// p is patient: only the Server's send timeout ends its connection
	// (and p dials again through the proxy).
	if err := waitUntil(ctx, "the Server failing the stuck connection", 15*time.Second, func() bool { return proxy.Accepted() > 1 }); err != nil {
		return out, err
	}
	out.detect = time.Since(stallAt)
	if err := waitUntil(ctx, "the other Clients served meanwhile", 15*time.Second, func() bool {
		return others[0].Since("s") > 100 && others[1].Since("s") > 100
	}); err != nil {
		return out, err
	}
	healAt := time.Now()
	proxy.Heal()
	out.load.Mark()
	if err := waitUntil(ctx, "p served again after the heal", 10*time.Second, func() bool { return out.load.Since("s") > 20 }); err != nil {
		return out, err
	}
	out.recover = time.Since(healAt)
	out.load.Stop()
	var otherErrs int
	for _, l := range others {
		l.Stop()
		a := l.Account()
		otherErrs += a.Ended - a.OK
	}
	if otherErrs > 0 {
		return out, fmt.Errorf("%d calls of the other Clients failed while p was stuck", otherErrs)
	}
	out.note = "detect: the stuck connection failed by the Server's 300ms send timeout; the other Clients saw no error"
	return out, nil
}
