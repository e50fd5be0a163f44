package benchrun

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"
)

func init() {
	register(Bench{
		Name: "spots",
		About: "Spots on Object Servers over loopback ZeroMQ and the in-memory Location Store: activations/s, requests/s to an active Spot " +
			"(local and remote owner) vs channel requests, heap per idle Spot vs raw protoactor-go actors, re-home time after a crash, " +
			"timers: 10,000 Spots at 20 Hz (CPU per firing, lateness p50/p99), " +
			"durable reminders: 100,000 at a 60 s period on 3 Object Servers over one real redis-server (redis commands/s idle and firing, lateness p99)",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			return runSpotsBench(ctx, w, spotsPlanFor(quick))
		},
	})
}

// Goals of the Spots bench.
const (
	goalSpotHeapBytes = 2048 // heap per idle Spot, whole process
	goalSpotHeapRatio = 2.5  // heap per idle Spot / heap per raw protoactor-go actor
)

// spotsPlan is the size of each part of the bench.
type spotsPlan struct {
	activations int           // new Spot IDs activated by first calls
	callers     int           // calling goroutines per node for the activations
	warmup      int           // calls before each timed request run
	requests    time.Duration // per side, per owner, per concurrency, per round
	rounds      int           // rounds of the throughput runs (median reported)
	inflight    int           // concurrency of the parallel request runs
	heapSpots   int           // Spots kept active for the heap measurement
	rehomeSpots int           // Spots spread over three servers before the crash
	timerSpots  int           // Spots ticking at 20 Hz in the timer part
	timerWindow time.Duration // how long the timer part measures
	// The reminders part (spots_reminders.go): remReminders at remPeriod,
	// first due remLead after the registrations start; redis measured
	// remIdle before the first due time and remWindow after it.
	remReminders                           int
	remPeriod, remLead, remIdle, remWindow time.Duration
}

func spotsPlanFor(quick bool) spotsPlan {
	if quick {
		return spotsPlan{activations: 1000, callers: 8, warmup: 100, requests: 200 * time.Millisecond, rounds: 1, inflight: 64,
			heapSpots: 5000, rehomeSpots: 45, timerSpots: 1000, timerWindow: 500 * time.Millisecond,
			remReminders: 300, remPeriod: time.Second, remLead: 3 * time.Second, remIdle: time.Second, remWindow: 2 * time.Second}
	}
	return spotsPlan{activations: 10000, callers: 16, warmup: 2000, requests: time.Second, rounds: 3, inflight: 64,
		heapSpots: 100_000, rehomeSpots: 600, timerSpots: 10_000, timerWindow: 5 * time.Second,
		remReminders: 100_000, remPeriod: time.Minute, remLead: 40 * time.Second, remIdle: 5 * time.Second, remWindow: 30 * time.Second}
}

func runSpotsBench(ctx context.Context, w io.Writer, plan spotsPlan) error {
	fmt.Fprintf(w, "setup: Object Servers in one process, loopback ZeroMQ, in-memory Location Store (automatic topology), "+
		"payload %d B, GOMAXPROCS=%d\n", spotsPayloadSize, runtime.GOMAXPROCS(0))
	// The heap part runs first, on a process with little to wind down.
	if err := spotsHeap(ctx, w, plan); err != nil {
		return err
	}
	liveHeap() // let the 100 000 Spots' teardown finish before timing calls
	if err := spotsThroughput(ctx, w, plan); err != nil {
		return err
	}
	if err := spotsRehome(ctx, w, plan); err != nil {
		return err
	}
	if err := spotsTimers(ctx, w, plan); err != nil {
		return err
	}
	return spotsReminders(ctx, w, plan)
}

// spotsVerdict is how a goal line ends.
func spotsVerdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}
