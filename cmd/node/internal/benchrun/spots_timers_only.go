package benchrun

import (
	"context"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
)

// `zlink-node bench spots-timers`: only the timers part of `bench spots`
// (10,000 Spots at 20 Hz; --quick: 1,000), for measuring it alone.
// ZLINK_TIMERS_PROFILE names a file that gets a CPU profile of the
// measured window (and file.allocs the allocations since the start); ZLINK_TIMERS_SPOTS=N runs N Spots instead (a load the
// node keeps up with compares CPU per firing on a busy machine).
func init() {
	register(Bench{
		Name:  "spots-timers",
		About: "the timers part of `bench spots` alone: 10,000 Spots at 20 Hz on one node (CPU per firing, lateness p50/p99); ZLINK_TIMERS_PROFILE=file saves a CPU profile of the window, ZLINK_TIMERS_SPOTS=N sets the Spots",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			plan := spotsPlanFor(quick)
			if n, _ := strconv.Atoi(os.Getenv("ZLINK_TIMERS_SPOTS")); n > 0 {
				plan.timerSpots = n
			}
			return spotsTimers(ctx, w, plan)
		},
		Explicit: true, // `bench spots` runs this part already
	})
}

// timersProfile starts a CPU profile of the timers window into the file
// ZLINK_TIMERS_PROFILE names (unset: none) and returns what ends it.
func timersProfile() func() { return envProfile("ZLINK_TIMERS_PROFILE") }

// envProfile starts a CPU profile into the file the environment variable
// env names (unset: none) and returns what ends it; the end also writes
// the allocations since the process started into file.allocs.
func envProfile(env string) func() {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		if a, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			_ = a.Close()
		}
	}
}
