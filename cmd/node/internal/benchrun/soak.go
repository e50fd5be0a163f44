package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

func init() {
	register(Bench{
		Name:     "soak",
		About:    "three Servers behind fault proxies, mixed traffic and random faults (partitions, one-way cuts, delay, throttle, reset); a running account of every call (run it by name; --duration, default 2m)",
		Explicit: true,
		Run:      runSoak,
	})
}

// soakLiveness notices a lost peer within about a second.
var soakLiveness = routemesh.LivenessConfig{Interval: 100 * time.Millisecond, MaxGap: 5, LastHeard: time.Second}

// soakErrs are the typed errors a soak call may end with.
var soakErrs = []error{zlink.ErrPeerLost, zlink.ErrTimeout, zlink.ErrBusy, zlink.ErrNoTarget}

// newSoakLedger accounts for every call of the soak: each issued call must
// end once, with a reply or a typed error.
func newSoakLedger() *fault.Ledger { return fault.NewLedger(soakErrs...) }

// soakLine is a running account of the soak.
func soakLine(l *fault.Ledger, elapsed time.Duration) string {
	a := l.Account()
	kinds := make([]string, 0, len(a.Errs))
	for k, v := range a.Errs {
		kinds = append(kinds, fmt.Sprintf("%s=%d", strings.TrimPrefix(k, "zlink: "), v))
	}
	sort.Strings(kinds)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("t=%-6s calls=%d ok=%d errors={%s} untyped=%d in_flight=%d goroutines=%d heap_mb=%.1f",
		elapsed.Truncate(time.Second), a.Issued, a.OK, strings.Join(kinds, ","), len(a.Untyped), a.Issued-a.Ended,
		runtime.NumGoroutine(), float64(ms.HeapAlloc)/(1<<20))
}

func runSoak(ctx context.Context, w io.Writer, quick bool) error {
	d := durationFrom(ctx, 2*time.Minute)
	if quick {
		d = min(d, 10*time.Second)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed^0x50a4))
	fmt.Fprintf(w, "soak: duration %v seed %d\n", d, seed)
	stops := []func(){}
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	startHost := func(o *zlink.Options) (*zlink.Host, error) {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		h, err := zlink.Start(sctx, o)
		if err != nil {
			return nil, err
		}
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = h.Stop(sctx)
		})
		return h, nil
	}
	echo := func(c *routemesh.Context, p []byte) ([]byte, error) { return p, nil }
	var proxies []*fault.Proxy
	oc := zlink.NewOptions()
	cm := oc.AddRouteMesh("soak").SetRoutingID("client").ConfigureLiveness(soakLiveness)
	var rids []string
	for i := range 3 {
		rid := fmt.Sprintf("s%d", i)
		o := zlink.NewOptions()
		o.AddRouteMesh("soak").SetRoutingID(rid).ConfigureLiveness(soakLiveness).HandleDirectRequest("echo", echo).
			Channel("work").Server().HandleRequest("echo", echo)
		h, err := startHost(o)
		if err != nil {
			return err
		}
		p, err := fault.New(h.Mesh("soak").Endpoint())
		if err != nil {
			return err
		}
		stops = append(stops, p.Close)
		proxies = append(proxies, p)
		cm.AddPeer(p.Endpoint(), rid)
		rids = append(rids, rid)
	}
	cm.Channel("work").Client()
	hc, err := startHost(oc)
	if err != nil {
		return err
	}
	cli := hc.Mesh("soak")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = cli.WaitPeers(wctx, 3)
	cancel()
	if err != nil {
		return fmt.Errorf("soak: peers: %w", err)
	}
	baseGoroutines := runtime.NumGoroutine()

	acct := newSoakLedger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, seed+1))
			payload := make([]byte, 64)
			for {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				var last error
				switch op := r.IntN(10); {
				case op < 7:
					acct.Begin()
					_, err := cli.Call(cctx, "work", "echo", payload)
					acct.End("", err)
					last = err
				case op < 9:
					acct.Begin()
					_, err := cli.CallNode(cctx, rids[r.IntN(len(rids))], "echo", payload)
					acct.End("", err)
					last = err
				default:
					acct.Begin()
					res, err := cli.Multicast(cctx, "work", "echo", payload)
					acct.End("", err)
					last = err
					for _, m := range res {
						acct.Begin()
						acct.End("", m.Err)
					}
				}
				cancel()
				if errors.Is(last, zlink.ErrNoTarget) {
					time.Sleep(time.Millisecond) // every Server cut off: pace the load, do not spin
				}
			}
		}(seed + uint64(i))
	}
	began := time.Now()
	report := time.NewTicker(max(d/12, time.Second))
	defer report.Stop()
	faultAt := time.NewTimer(0)
	defer faultAt.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	faults := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end.C:
			break loop
		case <-report.C:
			fmt.Fprintln(w, soakLine(acct, time.Since(began)))
		case <-faultAt.C:
			// One fault on one link, healed again after a while.
			p := proxies[rng.IntN(len(proxies))]
			switch rng.IntN(6) {
			case 0:
				p.Partition()
			case 1:
				p.CutUp()
			case 2:
				p.CutDown()
			case 3:
				p.Delay(time.Duration(rng.IntN(30)) * time.Millisecond)
			case 4:
				p.Throttle(16<<10 + rng.IntN(256<<10)) // a slow link
			default:
				p.Reset()
			}
			heal := time.AfterFunc(time.Duration(500+rng.IntN(2500))*time.Millisecond, func() { p.Heal(); p.Delay(0); p.Throttle(0) })
			stops = append(stops, func() { heal.Stop() })
			faults++
			faultAt.Reset(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		}
	}
	// Heal everything; the client must get all its Servers back.
	for _, p := range proxies {
		p.Heal()
		p.Delay(0)
		p.Throttle(0)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
	err = cli.WaitPeers(rctx, 3)
	rcancel()
	close(stop)
	wg.Wait()
	fmt.Fprintln(w, soakLine(acct, time.Since(began)))
	fmt.Fprintf(w, "soak: %d faults injected\n", faults)
	if err != nil {
		return fmt.Errorf("soak: the client did not get every Server back after the heal: %w", err)
	}
	a := acct.Account()
	if err := a.Check(); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if a.OK == 0 {
		return errors.New("soak: no call succeeded")
	}
	if g := runtime.NumGoroutine(); g > baseGoroutines+64 {
		return fmt.Errorf("soak: %d goroutines after recovery, %d before the load", g, baseGoroutines)
	}
	fmt.Fprintln(w, "soak ok: every call ended once, with a reply or a typed error")
	return nil
}
