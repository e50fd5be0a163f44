package benchrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// The heartbeat floor: the idle CPU goal's baseline, measured in the same
// run. N "nodes" in one process with no ZLink in them: a loopback TCP
// connection per pair, each side writing one heartbeat-sized frame per
// liveness Interval on every connection (one loop per node writes them
// all, back to back), a reader goroutine per connection end that reads
// and drops. It is what the heartbeat traffic of a full mesh costs the
// kernel and the Go runtime alone — the part of a node's idle CPU that no
// change inside ZLink can take away while every pair keeps a heartbeat
// per side per Interval.

// mixFloor is the floor's run (scaleSpec.Mix).
const mixFloor scaleMix = "tcp-heartbeat-floor"

// floorFrameSize is the size on the wire of a plain node's heartbeat: a
// Batch frame of one Heartbeat envelope (generation, revision, sequence,
// the channel weights of a one-channel node) and ZMTP's 2-byte header.
func floorFrameSize() int {
	hb := wire.Envelope{Kind: wire.KindHeartbeat, Generation: 1 << 40, Revision: 1 << 20, Seq: 1 << 20,
		Servers: map[string]uint16{"bench": 100}}
	b, err := wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameBatch, Batch: []wire.Envelope{hb}})
	if err != nil {
		return 64
	}
	return len(b) + 2
}

// scaleFloor measures the floor for spec.N nodes over spec.Window.
func scaleFloor(ctx context.Context, spec scaleSpec) (scaleResult, error) {
	n := spec.N
	r := scaleResult{Mix: mixFloor, N: n, Peers: n * (n - 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	defer ln.Close()
	var all []net.Conn
	var wg sync.WaitGroup
	defer func() {
		for _, c := range all {
			_ = c.Close()
		}
		wg.Wait()
	}()
	ends := make([][]net.Conn, n)
	start := time.Now()
	for i := range n {
		for j := i + 1; j < n; j++ {
			a, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return r, err
			}
			all = append(all, a)
			b, err := ln.Accept()
			if err != nil {
				return r, err
			}
			all = append(all, b)
			ends[i], ends[j] = append(ends[i], a), append(ends[j], b)
		}
	}
	r.Form = time.Since(start)
	for _, c := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	defer close(stop)
	frame := make([]byte, floorFrameSize())
	iv := routemesh.DefaultLivenessConfig().Interval
	for i := range ends {
		wg.Add(1)
		go func(cs []net.Conn) {
			defer wg.Done()
			t := time.NewTicker(iv)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				for _, c := range cs {
					_ = c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := c.Write(frame); err != nil {
						return
					}
				}
			}
		}(ends[i])
	}
	if err := sleepCtx(ctx, spec.Settle); err != nil {
		return r, err
	}
	stopProfile := scaleProfile(fmt.Sprintf("%s-%d", mixFloor, n))
	cpu0, t0 := cmpProcessCPU(), time.Now()
	err = sleepCtx(ctx, spec.Window)
	cpu, el := cmpProcessCPU()-cpu0, time.Since(t0)
	stopProfile()
	if err != nil {
		return r, err
	}
	r.Window = el
	r.CPU = 100 * cpu.Seconds() / el.Seconds() / float64(n)
	return r, nil
}

// printFloor prints the floor's line.
func printFloor(w io.Writer, r scaleResult) {
	fmt.Fprintf(w, "scale run=%s nodes=%d connections=%d cpu_per_node=%.3f%%  (baseline, no ZLink: a loopback TCP connection per pair, "+
		"each side writing a %d-byte frame every %v on each of its connections from one loop per node, a reader goroutine per end)\n",
		r.Mix, r.N, r.Peers/2, r.CPU, floorFrameSize(), routemesh.DefaultLivenessConfig().Interval)
}
