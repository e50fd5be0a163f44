package benchrun

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	printBenches = flag.Bool("benchrun.print", false, "TestPrintBenches: run the benches and print their lines")
	printQuick   = flag.Bool("benchrun.quick", false, "TestPrintBenches: quick mode")
	printNames   = flag.String("benchrun.names", "", "TestPrintBenches: comma-separated bench names (default all)")
)

// TestPrintBenches is how docs/benchmarks.md numbers are produced until the
// CLI exists:
//
//	go test -run TestPrintBenches -v ./cmd/node/internal/benchrun -args -benchrun.print
func TestPrintBenches(t *testing.T) {
	if !*printBenches {
		t.Skip("prints benchmark numbers only when asked: -args -benchrun.print [-benchrun.quick] [-benchrun.names=mesh]")
	}
	var names []string
	if *printNames != "" {
		names = strings.Split(*printNames, ",")
	}
	if err := Run(context.Background(), os.Stdout, names, *printQuick); err != nil {
		t.Fatal(err)
	}
}

// TestMeshBench_Quick runs the registered "mesh" bench in quick mode (the
// CI smoke test) and checks that every line it must print is there with a
// positive number: both sides, both sizes, both modes, both goal lines.
func TestMeshBench_Quick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, &out, []string{"mesh"}, true); err != nil {
		t.Fatalf("Run(mesh): %v\n%s", err, out.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, size := range []string{"64B", "16KiB"} {
		for _, side := range []string{"zlink", "zmq4"} {
			lock := regexp.MustCompile(`size=` + size + `\s+lockstep\s+` + side + `\s+(\d+) rt/s\s+p50\s+(\S+)\s+p99\s+(\S+)`)
			m := lock.FindStringSubmatch(text)
			if m == nil {
				t.Errorf("no lockstep line for %s %s", side, size)
				continue
			}
			if n, _ := strconv.Atoi(m[1]); n <= 0 {
				t.Errorf("lockstep %s %s rate %s, want > 0", side, size, m[1])
			}
			p50, err50 := time.ParseDuration(m[2])
			p99, err99 := time.ParseDuration(m[3])
			if err50 != nil || err99 != nil || p50 <= 0 || p99 < p50 {
				t.Errorf("lockstep %s %s p50=%s p99=%s, want 0 < p50 <= p99", side, size, m[2], m[3])
			}
			pipe := regexp.MustCompile(`size=` + size + `\s+pipelined\s+` + side + `\s+(\d+) msgs/s`)
			if m := pipe.FindStringSubmatch(text); m == nil {
				t.Errorf("no pipelined line for %s %s", side, size)
			} else if n, _ := strconv.Atoi(m[1]); n <= 0 {
				t.Errorf("pipelined %s %s rate %s, want > 0", side, size, m[1])
			}
		}
	}
	for _, want := range []string{
		"ratio size=64B pipelined zlink/zmq4 = ",
		"ratio size=64B lockstep p99 zlink/zmq4 = ",
		"ratio size=16KiB lockstep p99 zlink/zmq4 = ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing line %q", want)
		}
	}
}

func TestSummarize(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Microsecond // reversed: summarize must sort
	}
	r := summarize(lat, time.Second)
	if r.n != 100 || r.rate != 100 {
		t.Fatalf("n=%d rate=%v, want 100, 100", r.n, r.rate)
	}
	if r.p50 != 51*time.Microsecond || r.p99 != 100*time.Microsecond {
		t.Fatalf("p50=%v p99=%v, want 51µs 100µs", r.p50, r.p99)
	}
	if lat[0] != 100*time.Microsecond {
		t.Fatal("summarize reordered the caller's slice")
	}
	if z := summarize(nil, time.Second); z.rate != 0 || z.p99 != 0 {
		t.Fatalf("empty: %+v", z)
	}
}

// TestZMQEcho_PipelineCountsEveryEcho checks the baseline itself: every sent
// message comes back once, with the window never deadlocking at sizes
// around it.
func TestZMQEcho_PipelineCountsEveryEcho(t *testing.T) {
	e, err := startZMQEcho(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	for _, n := range []int{1, 7, 64, 1000} {
		got, err := e.pipeline(make([]byte, 64), 8, countGate(n))
		if err != nil || got != n {
			t.Fatalf("pipeline(n=%d): got %d, %v", n, got, err)
		}
	}
}

// ---- Go benchmarks: zlink channel calls and the raw zmq4 echo, side by side.

func benchSizes(b *testing.B, f func(b *testing.B, payload []byte)) {
	for _, size := range meshSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { f(b, make([]byte, size)) })
	}
}

func BenchmarkMesh_Call(b *testing.B) {
	ctx := context.Background()
	pair, err := startMeshPair(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer pair.stop()
	benchSizes(b, func(b *testing.B, payload []byte) {
		b.Run("mode=lockstep", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			t0 := time.Now()
			for b.Loop() {
				if err := pair.call(ctx, payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "msgs/s")
		})
		b.Run(fmt.Sprintf("mode=pipelined/inflight=%d", meshInflight), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			benchPipelined(b, func(next func() bool) (int, error) {
				return meshPipelined(ctx, pair, payload, meshInflight, next)
			})
		})
	})
}

func BenchmarkZMQ4_Echo(b *testing.B) {
	e, err := startZMQEcho(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer e.close()
	benchSizes(b, func(b *testing.B, payload []byte) {
		b.Run("mode=lockstep", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			t0 := time.Now()
			for b.Loop() {
				if err := e.roundTrip(payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "msgs/s")
		})
		b.Run(fmt.Sprintf("mode=pipelined/inflight=%d", meshInflight), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			benchPipelined(b, func(next func() bool) (int, error) {
				return e.pipeline(payload, meshInflight, next)
			})
		})
	})
}

// benchPipelined feeds one message per b.Loop iteration to a pipelined run
// through a ticket channel, so the iteration count is the message count.
func benchPipelined(b *testing.B, run func(next func() bool) (int, error)) {
	tickets := make(chan struct{}, meshInflight)
	next := func() bool { _, ok := <-tickets; return ok }
	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := run(next)
		done <- res{n, err}
	}()
	t0 := time.Now()
	sent := 0
	for b.Loop() {
		tickets <- struct{}{}
		sent++
	}
	close(tickets)
	r := <-done
	el := time.Since(t0)
	if r.err != nil {
		b.Fatal(r.err)
	}
	if r.n != sent {
		b.Fatalf("completed %d of %d messages", r.n, sent)
	}
	b.ReportMetric(float64(r.n)/el.Seconds(), "msgs/s")
}

// TestCompareLocal runs the local comparison small: both sides must have
// counted and answered every message and produced a rate.
func TestCompareLocal(t *testing.T) {
	r, err := CompareLocal(2000)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 2000 || r.ZlinkTell.MsgsPerSec <= 0 || r.ProtoTell.MsgsPerSec <= 0 || r.ZlinkRequest.MsgsPerSec <= 0 ||
		r.ProtoRequest.MsgsPerSec <= 0 || r.TellRatio <= 0 || r.RequestRatio <= 0 {
		t.Fatalf("result %+v", r)
	}
	t.Log(r)
}

func TestCompareLocal_RefusesNonPositive(t *testing.T) {
	if _, err := CompareLocal(0); err == nil {
		t.Fatal("CompareLocal(0) did not fail")
	}
}

// The soak runs only when named, and a short one accounts for every call
// through random faults (the long one is `make test-long`).
func TestSoak_Short(t *testing.T) {
	for _, b := range List() {
		if b.Name == "soak" && !b.Explicit {
			t.Fatal("the soak would run with every bench")
		}
	}
	var out strings.Builder
	ctx := WithDuration(context.Background(), 4*time.Second)
	if err := Run(ctx, &out, []string{"soak"}, false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "soak ok") {
		t.Fatalf("no verdict:\n%s", out.String())
	}
}
