package benchrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
)

// The two extra parts of `bench compare`, ZLink only, every server in a
// process of its own:
//   - multicast: one Node.Multicast to the 8 Servers of a channel against
//     8 sequential Node-direct CallNode requests to the same 8 nodes;
//   - failover: two Servers under load, one killed with SIGKILL; the time
//     to the first request that failed on it and then succeeded on the
//     other, and how many requests were lost (every request is retried on
//     ErrPeerLost, ErrNoTarget and ErrTimeout until it succeeds).

// CmpMulticast is the multicast part.
type CmpMulticast struct {
	Nodes       int        `json:"nodes"`
	Size        int        `json:"size"`
	Runs        []CmpMcRun `json:"runs"`
	Multicast   CmpMcStats `json:"multicast"`
	Sequential  CmpMcStats `json:"sequential"`
	SpeedupRate CmpStat    `json:"speedup_rate"` // multicast ops/s ÷ sequential ops/s, round by round
	Errors      []string   `json:"errors,omitempty"`
}

// CmpMcRun is one timed run of one side.
type CmpMcRun struct {
	Round       int     `json:"round"`
	Side        string  `json:"side"` // multicast or sequential
	Ops         int     `json:"ops"`
	Rate        float64 `json:"ops_per_sec"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	ClientCPUus float64 `json:"client_cpu_us_per_op"`
	ServerCPUus float64 `json:"servers_cpu_us_per_op"`
	Error       string  `json:"error,omitempty"`
}

// CmpMcStats is one side over the rounds.
type CmpMcStats struct {
	Rate  CmpStat `json:"ops_per_sec"`
	P50us CmpStat `json:"p50_us"`
	P99us CmpStat `json:"p99_us"`
	CPUus CmpStat `json:"cpu_us_per_op"` // client + the 8 server processes
}

// CmpFailover is the failover part.
type CmpFailover struct {
	Trials   []CmpFoTrial `json:"trials"`
	Callers  int          `json:"callers"`
	FirstMs  CmpStat      `json:"first_rerouted_success_ms"`
	SettleMs CmpStat      `json:"last_failure_ms"`
	Lost     int          `json:"requests_lost"`
}

// CmpFoTrial is one kill.
type CmpFoTrial struct {
	Requests        int            `json:"requests"`        // requests that ended (each after its retries)
	Failed          int            `json:"failed_attempts"` // attempts that ended in an error
	Rerouted        int            `json:"rerouted"`        // requests that failed on the killed server and then succeeded
	Lost            int            `json:"lost"`            // requests that never succeeded
	FirstReroutedMs float64        `json:"first_rerouted_success_ms"`
	LastFailureMs   float64        `json:"last_failure_ms"`
	ErrorKinds      map[string]int `json:"error_kinds"`
	Error           string         `json:"error,omitempty"`
}

const (
	cmpMcNodes       = 8
	cmpFoCallers     = 64
	cmpFoGiveUpAfter = 10 * time.Second
)

// extras runs the multicast and failover parts; an error of either is
// recorded in its result, not returned.
func (r *cmpRunner) extras(ctx context.Context) error {
	mc := r.multicast(ctx)
	r.res.Multicast = mc
	fmt.Fprintf(r.w, "compare multicast nodes=%d size=%dB multicast %s ops/s p50 %sµs p99 %sµs cpu %sµs/op; sequential %s ops/s p50 %sµs p99 %sµs cpu %sµs/op; multicast/sequential rate %s\n",
		mc.Nodes, mc.Size, mc.Multicast.Rate.format("%.0f"), mc.Multicast.P50us.format("%.0f"), mc.Multicast.P99us.format("%.0f"), mc.Multicast.CPUus.format("%.1f"),
		mc.Sequential.Rate.format("%.0f"), mc.Sequential.P50us.format("%.0f"), mc.Sequential.P99us.format("%.0f"), mc.Sequential.CPUus.format("%.1f"),
		mc.SpeedupRate.format("%.2fx"))
	for _, e := range mc.Errors {
		fmt.Fprintf(r.w, "compare multicast error: %s\n", e)
	}
	fo := r.failover(ctx)
	r.res.Failover = fo
	for i, t := range fo.Trials {
		if t.Error != "" {
			fmt.Fprintf(r.w, "compare failover trial=%d FAILED: %s\n", i+1, t.Error)
			continue
		}
		fmt.Fprintf(r.w, "compare failover trial=%d first_rerouted_success=%.1fms last_failure=%.1fms requests=%d failed_attempts=%d rerouted=%d lost=%d errors=%v\n",
			i+1, t.FirstReroutedMs, t.LastFailureMs, t.Requests, t.Failed, t.Rerouted, t.Lost, t.ErrorKinds)
	}
	fmt.Fprintf(r.w, "compare failover callers=%d first_rerouted_success %sms last_failure %sms requests_lost=%d\n",
		fo.Callers, fo.FirstMs.format("%.1f"), fo.SettleMs.format("%.1f"), fo.Lost)
	return nil
}

// startZlinkServers starts n ZLink server processes and a client node
// that sees them all Ready.
func (r *cmpRunner) startZlinkServers(ctx context.Context, n int) ([]*cmpServerProc, []string, *cmpZlinkClient, error) {
	rids := cmpZlinkServerRIDs(n)
	procs := make([]*cmpServerProc, 0, n)
	eps := map[string]string{}
	for _, rid := range rids {
		p, err := cmpStartServer(ctx, r.o.launcher, "zlink", "--rid", rid)
		if err != nil {
			for _, q := range procs {
				q.stop()
			}
			return nil, nil, nil, err
		}
		procs = append(procs, p)
		eps[rid] = p.endpoint
	}
	c, err := cmpDialZlink(ctx, cmpClientRID, eps, nil)
	if err != nil {
		for _, q := range procs {
			q.stop()
		}
		return nil, nil, nil, err
	}
	return procs, rids, c, nil
}

func (r *cmpRunner) multicast(ctx context.Context) *CmpMulticast {
	mc := &CmpMulticast{Nodes: cmpMcNodes, Size: 64}
	procs, rids, c, err := r.startZlinkServers(ctx, cmpMcNodes)
	if err != nil {
		mc.Errors = append(mc.Errors, cmpOneLineErr(err))
		return mc
	}
	defer func() {
		c.close()
		for _, p := range procs {
			p.stop()
		}
	}()
	payload := cmpPayload(mc.Size)
	cctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	multi := func() error {
		res, err := c.node.Multicast(cctx, cmpChannel, cmpPacket, payload)
		if err != nil {
			return err
		}
		if len(res) != cmpMcNodes {
			return fmt.Errorf("multicast reached %d of %d members", len(res), cmpMcNodes)
		}
		for _, m := range res {
			if m.Err != nil {
				return fmt.Errorf("member %s: %w", m.RID, m.Err)
			}
		}
		return nil
	}
	seq := func() error {
		for _, rid := range rids {
			if _, err := c.node.CallNode(cctx, rid, cmpPacket, payload); err != nil {
				return fmt.Errorf("%s: %w", rid, err)
			}
		}
		return nil
	}
	sides := []struct {
		name string
		op   func() error
	}{{"multicast", multi}, {"sequential", seq}}
	serversCPU := func() (time.Duration, error) {
		var sum time.Duration
		for _, p := range procs {
			d, err := p.cpu()
			if err != nil {
				return 0, err
			}
			sum += d
		}
		return sum, nil
	}
	// Warm-up.
	for _, s := range sides {
		for range 200 {
			if err := s.op(); err != nil {
				mc.Errors = append(mc.Errors, fmt.Sprintf("warm-up %s: %s", s.name, cmpOneLineErr(err)))
				return mc
			}
		}
	}
	dur := r.o.Lockstep
	for round := range r.o.Rounds {
		order := slices.Clone(sides)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			run := CmpMcRun{Round: round + 1, Side: s.name}
			runtime.GC()
			s0, err := serversCPU()
			if err != nil {
				mc.Errors = append(mc.Errors, cmpOneLineErr(err))
				return mc
			}
			c0 := cmpProcessCPU()
			lat := make([]time.Duration, 0, 4096)
			t0 := time.Now()
			for time.Since(t0) < dur {
				t := time.Now()
				if err = s.op(); err != nil {
					break
				}
				lat = append(lat, time.Since(t))
			}
			el := time.Since(t0)
			c1 := cmpProcessCPU()
			s1, serr := serversCPU()
			if err = errors.Join(err, serr); err != nil {
				run.Error = cmpOneLineErr(err)
				mc.Errors = append(mc.Errors, fmt.Sprintf("round %d %s: %s", run.Round, s.name, run.Error))
			} else {
				ls := summarize(lat, el)
				run.Ops, run.Rate = ls.n, ls.rate
				run.P50us, run.P99us = float64(ls.p50.Nanoseconds())/1e3, float64(ls.p99.Nanoseconds())/1e3
				if ls.n > 0 {
					run.ClientCPUus = float64((c1 - c0).Microseconds()) / float64(ls.n)
					run.ServerCPUus = float64((s1 - s0).Microseconds()) / float64(ls.n)
				}
			}
			mc.Runs = append(mc.Runs, run)
		}
	}
	stats := func(side string) CmpMcStats {
		var rate, p50, p99, cpu []float64
		for _, run := range mc.Runs {
			if run.Side != side || run.Error != "" {
				continue
			}
			rate = append(rate, run.Rate)
			p50 = append(p50, run.P50us)
			p99 = append(p99, run.P99us)
			cpu = append(cpu, run.ClientCPUus+run.ServerCPUus)
		}
		return CmpMcStats{Rate: cmpStatOf(rate), P50us: cmpStatOf(p50), P99us: cmpStatOf(p99), CPUus: cmpStatOf(cpu)}
	}
	mc.Multicast, mc.Sequential = stats("multicast"), stats("sequential")
	var sp []float64
	for round := 1; round <= r.o.Rounds; round++ {
		var m, s = math.NaN(), math.NaN()
		for _, run := range mc.Runs {
			if run.Round == round && run.Error == "" {
				if run.Side == "multicast" {
					m = run.Rate
				} else {
					s = run.Rate
				}
			}
		}
		sp = append(sp, cmpRatio(m, s))
	}
	mc.SpeedupRate = cmpStatOf(sp)
	return mc
}

func (r *cmpRunner) failover(ctx context.Context) *CmpFailover {
	fo := &CmpFailover{Callers: cmpFoCallers}
	trials := 3
	if r.o.Quick {
		trials = 1
	}
	var first, settle []float64
	for range trials {
		t := r.failoverTrial(ctx)
		fo.Trials = append(fo.Trials, t)
		fo.Lost += t.Lost
		if t.Error == "" {
			first = append(first, t.FirstReroutedMs)
			settle = append(settle, t.LastFailureMs)
		}
	}
	fo.FirstMs, fo.SettleMs = cmpStatOf(first), cmpStatOf(settle)
	return fo
}

// failoverTrial: two Servers, cmpFoCallers callers each calling in a loop
// (every request retried until it succeeds), SIGKILL to one Server after
// a warm period, load kept on for a while, then the account.
func (r *cmpRunner) failoverTrial(ctx context.Context) CmpFoTrial {
	t := CmpFoTrial{ErrorKinds: map[string]int{}}
	procs, rids, c, err := r.startZlinkServers(ctx, 2)
	if err != nil {
		t.Error = cmpOneLineErr(err)
		return t
	}
	defer func() {
		c.close()
		for _, p := range procs {
			select {
			case <-p.exited:
			default:
				p.stop()
			}
		}
	}()
	victim := rids[0]
	payload := cmpPayload(64)
	before, after := 700*time.Millisecond, 1500*time.Millisecond
	if r.o.Quick {
		before, after = 300*time.Millisecond, 700*time.Millisecond
	}
	var (
		stop      atomic.Bool
		killedAt  atomic.Int64 // unix ns, 0 before the kill
		mu        sync.Mutex
		firstRe   time.Duration = -1
		lastFail  time.Duration = -1
		wg        sync.WaitGroup
		requests  atomic.Int64
		failed    atomic.Int64
		rerouted  atomic.Int64
		lost      atomic.Int64
		victimHit atomic.Int64 // successes served by the victim before the kill
	)
	cctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	for range cmpFoCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Now()
				failedOnce := false
				for {
					out, from, err := c.node.CallFrom(cctx, cmpChannel, cmpPacket, payload)
					if err == nil && len(out) != len(payload) {
						err = errEchoMismatch
					}
					if err == nil {
						if from == victim && killedAt.Load() == 0 {
							victimHit.Add(1)
						}
						if failedOnce {
							rerouted.Add(1)
							if k := killedAt.Load(); k != 0 {
								d := time.Since(time.Unix(0, k))
								mu.Lock()
								if firstRe < 0 || d < firstRe {
									firstRe = d
								}
								mu.Unlock()
							}
						}
						break
					}
					failed.Add(1)
					failedOnce = true
					kind := "other"
					for _, e := range []error{zlink.ErrPeerLost, zlink.ErrNoTarget, zlink.ErrTimeout, zlink.ErrBusy} {
						if errors.Is(err, e) {
							kind = e.Error()
						}
					}
					mu.Lock()
					t.ErrorKinds[kind]++
					if k := killedAt.Load(); k != 0 {
						if d := time.Since(time.Unix(0, k)); d > lastFail {
							lastFail = d
						}
					}
					mu.Unlock()
					if time.Since(start) > cmpFoGiveUpAfter {
						lost.Add(1)
						break
					}
					time.Sleep(time.Millisecond)
				}
				requests.Add(1)
			}
		}()
	}
	time.Sleep(before)
	killedAt.Store(time.Now().UnixNano())
	procs[0].kill()
	time.Sleep(after)
	stop.Store(true)
	wg.Wait()
	t.Requests, t.Failed, t.Rerouted, t.Lost = int(requests.Load()), int(failed.Load()), int(rerouted.Load()), int(lost.Load())
	t.FirstReroutedMs = float64(firstRe.Microseconds()) / 1e3
	t.LastFailureMs = float64(lastFail.Microseconds()) / 1e3
	switch {
	case victimHit.Load() == 0:
		t.Error = "the killed Server served no request before the kill (no load on it to fail over)"
	case firstRe < 0:
		t.Error = fmt.Sprintf("no request failed on the killed Server and then succeeded (%d failed attempts)", t.Failed)
	}
	return t
}
