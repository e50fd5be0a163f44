package benchrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// One measured run of an implementation, its profile, and what its
// library logged.

// cmpPayload is size pseudo-random bytes (the same for every
// implementation of a scenario).
func cmpPayload(size int) []byte {
	p := make([]byte, size)
	x := uint32(2463534242)
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}

// measure runs one timed run of implementation name. A failed or stalled
// run is recorded with its error (and the client is dialed again for the
// next run), not returned: the other implementations keep running.
func (r *cmpRunner) measure(ctx context.Context, name string, sc cmpScenario, payload []byte, dur time.Duration, round int) CmpRun {
	run := CmpRun{Round: round + 1, Impl: name}
	fail := func(err error) CmpRun {
		run.Error = cmpOneLineErr(err)
		if e := r.redial(ctx, name); e != nil {
			run.Error += "; redial: " + cmpOneLineErr(e)
		}
		return run
	}
	c := r.clients[name]
	if c == nil {
		if err := r.redial(ctx, name); err != nil {
			run.Error = cmpOneLineErr(err)
			return run
		}
		c = r.clients[name]
	}
	srv := r.servers[name]
	runtime.GC() // the previous run's garbage is not this run's CPU
	s0, err := srv.cpu()
	if err != nil {
		run.Error = cmpOneLineErr(err)
		return run
	}
	c0 := cmpProcessCPU()
	g := newGate(dur, 1<<26)
	defer g.close()
	var last atomic.Int64
	var started atomic.Int64
	last.Store(time.Now().UnixNano())
	next := func() bool {
		last.Store(time.Now().UnixNano())
		if g.next() {
			started.Add(1)
			return true
		}
		return false
	}
	type outcome struct {
		lat []time.Duration
		n   int
		err error
	}
	done := make(chan outcome, 1)
	t0 := time.Now()
	go func() {
		var o outcome
		if sc.lockstep() {
			o.lat, o.err = c.lockstep(payload, next)
			o.n = len(o.lat)
		} else {
			o.n, o.err = c.pipelined(payload, sc.window, next)
		}
		done <- o
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var out outcome
wait:
	for {
		select {
		case out = <-done:
			break wait
		case <-tick.C:
			if idle := time.Since(time.Unix(0, last.Load())); idle > cmpStall {
				c.close()
				delete(r.clients, name)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
				}
				return fail(fmt.Errorf("stalled: nothing for %v after %d requests started%s", idle.Round(time.Second), started.Load(), r.libLogNote()))
			}
		}
	}
	el := time.Since(t0)
	c1 := cmpProcessCPU()
	s1, serr := srv.cpu()
	if out.err != nil {
		return fail(fmt.Errorf("after %d round trips: %w%s", out.n, out.err, r.libLogNote()))
	}
	if serr != nil {
		run.Error = cmpOneLineErr(serr)
		return run
	}
	run.N = out.n
	run.Seconds = el.Seconds()
	if out.n > 0 {
		run.Rate = float64(out.n) / el.Seconds()
		run.ClientCPUus = float64((c1 - c0).Microseconds()) / float64(out.n)
		run.ServerCPUus = float64((s1 - s0).Microseconds()) / float64(out.n)
	}
	if sc.lockstep() {
		ls := summarize(out.lat, el)
		run.P50us = float64(ls.p50.Nanoseconds()) / 1e3
		run.P99us = float64(ls.p99.Nanoseconds()) / 1e3
	}
	return run
}

// libLogNote is the client libraries' last warnings, for an error.
func (r *cmpRunner) libLogNote() string {
	s := strings.TrimSpace(r.libLog.String())
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return "; client library log: " + strings.Join(lines, " | ")
}

// protoDefaultLimits runs Proto.Actor's 16 KiB pipelined scenario once
// with gRPC's default message limits, on a server process of its own.
func (r *cmpRunner) protoDefaultLimits(ctx context.Context) string {
	const name = "protoactor"
	sc := cmpScenario{name: "16KiB-pipelined", size: 16 << 10, window: cmpWindow}
	p, err := cmpStartServer(ctx, r.o.launcher, name, "--default-limits")
	if err != nil {
		return "Proto.Actor with gRPC's default limits: could not start its server: " + cmpOneLineErr(err)
	}
	r.libLog.reset()
	c, err := cmpDialProto(ctx, p.endpoint, cmpDialOpts{defaultLimits: true, log: r.libLog})
	if err != nil {
		p.stop()
		return "Proto.Actor with gRPC's default limits: could not start its client: " + cmpOneLineErr(err)
	}
	saved, savedC := r.servers[name], r.clients[name]
	r.servers[name], r.clients[name] = p, c
	run := r.measure(ctx, name, sc, cmpPayload(sc.size), r.o.Pipelined, 0)
	if c := r.clients[name]; c != nil {
		c.close()
	}
	p.stop()
	r.servers[name], r.clients[name] = saved, savedC
	if run.Error != "" {
		return fmt.Sprintf("Proto.Actor with gRPC's default 4 MiB message limit, 16 KiB pipelined (%d in flight): FAILS: %s. "+
			"The scenarios above raise the limit to %d MiB (grpc.MaxRecvMsgSize on both processes' servers).", cmpWindow, run.Error, cmpProtoMaxMsg>>20)
	}
	return fmt.Sprintf("Proto.Actor with gRPC's default 4 MiB message limit, 16 KiB pipelined (%d in flight): works (%.0f msgs/s in one run).", cmpWindow, run.Rate)
}

// profile runs one more (unrecorded) run of name with both processes
// profiled, and returns the top entries of each profile.
func (r *cmpRunner) profile(ctx context.Context, name string, sc cmpScenario, payload []byte, dur time.Duration) ([]CmpProfile, error) {
	if err := os.MkdirAll(r.o.ProfileDir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(r.o.ProfileDir, sc.name+"-"+name)
	srv := r.servers[name]
	if _, err := srv.request("profile " + base + "-server"); err != nil {
		return nil, err
	}
	cp, err := cmpStartProfile(base + "-client")
	if err != nil {
		_, _ = srv.request("profile-stop")
		return nil, err
	}
	run := r.measure(ctx, name, sc, payload, dur, -1)
	cerr := cp.stop()
	_, serr := srv.request("profile-stop")
	if err := errors.Join(cerr, serr); err != nil {
		return nil, err
	}
	if run.Error != "" {
		fmt.Fprintf(r.w, "compare profile scenario=%s impl=%s: the profiled run failed: %s\n", sc.name, name, run.Error)
	}
	var out []CmpProfile
	for _, proc := range []string{"client", "server"} {
		prefix := base + "-" + proc
		if p, err := cmpTopOfProfile(prefix+".cpu.pprof", "", "cpu", 12); err == nil {
			p.Scenario, p.Impl, p.Process, p.RoundTrips = sc.name, name, proc, run.N
			out = append(out, p)
		} else {
			fmt.Fprintf(r.w, "compare profile %s: %v\n", prefix, err)
		}
		if p, err := cmpTopOfProfile(prefix+".allocs.pprof", prefix+".allocs-base.pprof", "alloc_space", 8); err == nil {
			p.TopCum = nil // allocation sites: the flat list says it
			p.Scenario, p.Impl, p.Process, p.RoundTrips = sc.name, name, proc, run.N
			out = append(out, p)
		} else {
			fmt.Fprintf(r.w, "compare profile %s: %v\n", prefix, err)
		}
	}
	fmt.Fprintf(r.w, "compare profile scenario=%s impl=%s saved %s-{client,server}.{cpu,allocs,allocs-base}.pprof\n", sc.name, name, base)
	return out, nil
}

// save writes the JSON, the markdown region and the charts asked for.
func (r *cmpRunner) save() error {
	var errs []error
	if r.o.JSONPath != "" {
		errs = append(errs, cmpWriteJSON(r.o.JSONPath, r.res))
		fmt.Fprintf(r.w, "compare wrote %s\n", r.o.JSONPath)
	}
	if r.o.DocsPath != "" || r.o.ImgDir != "" {
		errs = append(errs, WriteCompareReport(r.res, r.o.DocsPath, r.o.ImgDir, r.o.JSONPath))
		fmt.Fprintf(r.w, "compare wrote report docs=%q img=%q\n", r.o.DocsPath, r.o.ImgDir)
	}
	return errors.Join(errs...)
}
