package test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// TestPeerCost_GoroutinesAndIdleHeapPerConnection: what one side of an
// idle connection costs the process (docs/operations.md, "Sizing"): at
// most 2 goroutines (its reader — ours on a dialed pipe, the listener's on
// an accepted one — and its writer, which runs only while it has
// something to send) and at most 32 KiB of heap, read and write buffers
// included (they are pooled while the connection is quiet).
// Measured as the difference between 12 nodes that each dial every node
// started before them (a full mesh: 90 connection sides, real ZeroMQ
// sockets) and the same number of nodes with no peer: everything a node costs
// alone cancels out. No timing threshold: the counts are polled until
// they settle.
func TestPeerCost_GoroutinesAndIdleHeapPerConnection(t *testing.T) {
	const nodes = 10
	const sides = nodes * (nodes - 1)
	// Every set keeps running until the test ends, so no stop frees
	// memory while another set is measured. The first nodes of the
	// process also pay for what is made once (pools, caches): a warm-up
	// set, not counted.
	prefix := 0
	set := func(connected bool, settled func(processCost) bool) processCost {
		prefix++
		return nodesCost(t, fmt.Sprintf("cost%d", prefix), nodes, connected, settled)
	}
	set(false, nil)
	set(true, nil)
	alone := set(false, nil)
	meshed := set(true, func(c processCost) bool {
		return float64(c.goroutines-alone.goroutines)/sides <= 2 &&
			(float64(c.heap)-float64(alone.heap))/sides <= 32<<10
	})
	gor := float64(meshed.goroutines-alone.goroutines) / sides
	heap := (float64(meshed.heap) - float64(alone.heap)) / sides
	t.Logf("per connection side: %.2f goroutines, %.1f KiB heap (alone: %d goroutines, %d KiB; meshed: %d, %d KiB)",
		gor, heap/1024, alone.goroutines, alone.heap>>10, meshed.goroutines, meshed.heap>>10)
	if gor > 2 {
		t.Errorf("%.2f goroutines per connection side; want at most 2", gor)
	}
	if heap > 32<<10 {
		t.Errorf("%.1f KiB heap per idle connection side; want at most 32 KiB", heap/1024)
	}
}

// processCost is what a set of nodes adds to the process.
type processCost struct {
	goroutines int
	heap       int64
}

// nodesCost starts n nodes of one mesh, each with every node started
// before it as a peer or with none, waits until they are idle (the mesh
// full, the counts settled, and settled(cost) when given) and returns what
// the process grew by. The nodes stop at the end of t.
func nodesCost(t *testing.T, mesh string, n int, connected bool, settled func(processCost) bool) processCost {
	t.Helper()
	before := measureProcess()
	var ns []*routemesh.Node
	for i := range n {
		o := zlink.NewOptions()
		// Heartbeats every 2 s: a writer lingers a moment after each one,
		// so the fewer there are, the closer a look comes to the standing
		// cost.
		b := o.AddRouteMesh(mesh).SetRoutingID(fmt.Sprintf("%s-%d", mesh, i)).
			ConfigureLiveness(routemesh.LivenessConfig{Interval: 2 * time.Second, MaxGap: 5, LastHeard: 10 * time.Second})
		for _, peer := range ns {
			if connected {
				b.AddPeer(peer.Endpoint(), peer.RID())
			}
		}
		ns = append(ns, startQuietHost(t, o).Mesh(mesh))
	}
	if connected {
		waitFullMesh(t, ns...)
	}
	var grown processCost
	prev := processCost{goroutines: -1}
	for deadline := time.Now().Add(60 * time.Second); ; {
		now := measureProcess()
		grown = processCost{goroutines: now.goroutines - before.goroutines, heap: now.heap - before.heap}
		// Settled: two looks alike within a goroutine or two and half a
		// MiB (what earlier nodes of the process leave behind while it
		// ends moves both a little).
		stable := abs64(int64(grown.goroutines-prev.goroutines)) <= 2 && abs64(grown.heap-prev.heap) < 512<<10
		prev = grown
		if stable && (settled == nil || settled(grown)) {
			return grown
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the process cost did not settle within its bounds: grew by %d goroutines and %d KiB of heap (stable: %v)",
				mesh, grown.goroutines, grown.heap>>10, stable)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startQuietHost is startHost without the test's logger (which keeps
// every line in memory until the test ends).
func startQuietHost(t *testing.T, o *zlink.Options) *zlink.Host {
	t.Helper()
	o.SetLogger(zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { stopHost(t, h) })
	return h
}

// measureProcess counts the process's goroutines (the fewest of a few
// looks: a goroutine that runs for an instant — a timer's, an actor's
// turn — is not a standing cost) and its live heap after a collection.
func measureProcess() processCost {
	g := runtime.NumGoroutine()
	for range 10 {
		time.Sleep(5 * time.Millisecond)
		g = min(g, runtime.NumGoroutine())
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return processCost{goroutines: g, heap: int64(ms.HeapAlloc)}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
