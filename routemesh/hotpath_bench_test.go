package routemesh

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/wire"
)

// The hot path of a call, in one process over loopback: the shapes of
// `zlink-node bench compare` (a Server on channel "echo", a client that
// dialed it), so allocations per round trip can be read beside the
// two-process numbers. Allocations are both nodes' together.

// benchChannelPair is a server with a Server role on channel "echo" and a
// client with a Client role that dialed it.
func benchChannelPair(b *testing.B) (cli *Node) {
	b.Helper()
	start := func(rid string, setup func(*MeshBuilder)) *Node {
		mb := NewMeshBuilder("bench").Listen("tcp://127.0.0.1:0").SetRoutingID(rid).
			ConfigureRouterSocket(SocketConfig{SendHWM: 4096})
		setup(mb)
		cfg := mb.Config()
		sys := actors.NewSystem(actors.Config{Name: "b-" + rid})
		n, err := Start(context.Background(), cfg, Deps{System: sys})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = n.Stop(context.Background())
			_ = sys.Shutdown(context.Background())
		})
		return n
	}
	srv := start("srv", func(mb *MeshBuilder) {
		mb.Channel("echo").Server().HandleRequest("echo", func(c *Context, p []byte) ([]byte, error) { return p, nil })
	})
	cli = start("cli", func(mb *MeshBuilder) {
		mb.AddPeer(srv.Endpoint(), "srv")
		mb.Channel("echo").Client()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, err := cli.Call(ctx, "echo", "echo", nil); err == nil {
			break
		} else if ctx.Err() != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	return cli
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per op since start (both
// nodes): steadier than the time per op on a shared machine.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHotPath_CallFuture keeps 1000 CallFutures in flight from one
// goroutine and waits for them in order (the compare bench's pipelined
// client).
func BenchmarkHotPath_CallFuture(b *testing.B) { benchFutureWindow(b, benchChannelPair(b)) }

// benchFutureWindow keeps 1000 CallFutures of 64 B to cli's channel "echo"
// in flight, waiting for them in order.
func benchFutureWindow(b *testing.B, cli *Node) {
	payload := make([]byte, 64)
	const window = 1000
	ring := make([]*Future, window)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		if f := ring[i]; f != nil {
			if _, err := f.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		ring[i] = cli.CallFuture("echo", "echo", payload, 30*time.Second)
		i = (i + 1) % window
	}
	for _, f := range ring {
		if f != nil {
			if _, err := f.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkHotPath_CallLockstep is one Call at a time under one context
// deadline (no timer per call), as the compare bench's lockstep client.
func BenchmarkHotPath_CallLockstep(b *testing.B) { benchLockstep(b, benchChannelPair(b)) }

// benchLockstep makes 64 B calls to cli's channel "echo", one at a time.
func benchLockstep(b *testing.B, cli *Node) {
	payload := make([]byte, 64)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := cli.Call(ctx, "echo", "echo", payload); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkHotPath_CallTable registers and completes calls without a
// network: the correlation table (and its deadline bookkeeping) alone.
func BenchmarkHotPath_CallTable(b *testing.B) {
	t := newCallTable()
	const window = 1000
	var ring [window]*pending
	var corr uint64
	end := func(c uint64) {
		i := c % window
		if !t.complete(c, result{}) {
			b.Fatal("not pending")
		}
		<-ring[i].done
		t.release(ring[i])
		ring[i] = nil
	}
	b.ReportAllocs()
	for b.Loop() {
		corr++
		if corr > window {
			end(corr - window)
		}
		ring[corr%window] = t.add(corr, "pipe", "rid")
	}
	for c := max(corr, window) - window + 1; c <= corr; c++ {
		end(c)
	}
}

// BenchmarkHotPath_EnvelopeSize is the size estimate every envelope pays
// several times (admission, the writer's batch bound, the owner budget).
func BenchmarkHotPath_EnvelopeSize(b *testing.B) {
	e := wire.Envelope{Kind: wire.KindRequest, Corr: 1 << 40, Channel: "echo", Packet: "echo", TimeoutMs: 30000, Payload: make([]byte, 64)}
	n := 0
	for b.Loop() {
		n += e.Size()
	}
	_ = n
}

// BenchmarkHotPath_CallTableTimed is CallTable with every call carrying its
// own deadline (the asynchronous calls' case): the deadline heap's cost.
func BenchmarkHotPath_CallTableTimed(b *testing.B) {
	t := newCallTable()
	const window = 1000
	var ring [window]*pending
	var corr uint64
	end := func(c uint64) {
		i := c % window
		if !t.complete(c, result{}) {
			b.Fatal("not pending")
		}
		<-ring[i].done
		t.release(ring[i])
		ring[i] = nil
	}
	b.ReportAllocs()
	for b.Loop() {
		corr++
		if corr > window {
			end(corr - window)
		}
		ring[corr%window] = t.addTimed(corr, "pipe", "rid", t.now(), 30*time.Second)
	}
	for c := max(corr, window) - window + 1; c <= corr; c++ {
		end(c)
	}
}

// TestCallTable_DeadlinesEndEachCallOnce registers calls with mixed
// deadlines, completes some early, and checks that every call ends exactly
// once: the early ones with their result, the others with a timeout no
// earlier than their deadline and not much later.
func TestCallTable_DeadlinesEndEachCallOnce(t *testing.T) {
	tab := newCallTable()
	const calls = 3000
	type rec struct {
		p        *pending
		deadline time.Time
		early    bool
	}
	recs := make([]rec, calls)
	for i := range recs {
		timeout := time.Duration(20+(i*7919)%180) * time.Millisecond
		if i%3 != 2 {
			// Ended early or by failPipe: a deadline that cannot come
			// first however slow this machine is.
			timeout = time.Hour
		}
		now := tab.now()
		recs[i] = rec{
			p:        tab.addTimed(uint64(i+1), "pipe-"+string(rune('a'+i%3)), "rid", now, timeout),
			deadline: tab.epoch.Add(time.Duration(now) + timeout),
			early:    i%3 == 0,
		}
	}
	for i := range recs {
		if recs[i].early && !tab.complete(uint64(i+1), result{payload: []byte("ok")}) {
			t.Fatalf("call %d ended before its reply", i)
		}
	}
	// A lost pipe ends its calls at once (ErrPeerLost here).
	lost := tab.failPipe("pipe-b", wire.ErrPeerLost)
	for i := range recs {
		r := recs[i]
		select {
		case res := <-r.p.done:
			now := time.Now()
			switch {
			case r.early:
				if string(res.payload) != "ok" || res.err != nil {
					t.Fatalf("call %d: early result %v", i, res.err)
				}
			case i%3 == 1:
				if !errors.Is(res.err, wire.ErrPeerLost) {
					t.Fatalf("call %d: %v, want ErrPeerLost", i, res.err)
				}
			default:
				if !errors.Is(res.err, wire.ErrTimeout) || !res.expired {
					t.Fatalf("call %d: %v, want ErrTimeout", i, res.err)
				}
				if now.Before(r.deadline) {
					t.Fatalf("call %d timed out %v early", i, r.deadline.Sub(now))
				}
				if late := now.Sub(r.deadline); late > 500*time.Millisecond {
					t.Fatalf("call %d timed out %v late", i, late)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d never ended", i)
		}
		select {
		case <-r.p.done:
			t.Fatalf("call %d ended twice", i)
		default:
		}
	}
	if lost != calls/3 {
		t.Fatalf("failPipe ended %d calls, want %d", lost, calls/3)
	}
	if n := tab.pending.load(); n != 0 {
		t.Fatalf("%d calls still counted pending", n)
	}
	for i := range tab.shards {
		s := &tab.shards[i]
		s.mu.Lock()
		if s.byCorr.len() != 0 || len(s.heap) != 0 || s.flive != 0 {
			t.Fatalf("shard %d holds %d entries, %d in its heap, %d in its queue", i, s.byCorr.len(), len(s.heap), s.flive)
		}
		s.mu.Unlock()
	}
}

// TestDecodeFrameInto_ReusedBatchMatchesDecodeFrame decodes frames of
// different shapes into one reused batch array (a full-fielded batch, then
// smaller and sparser ones) and checks each against DecodeFrame.
func TestDecodeFrameInto_ReusedBatchMatchesDecodeFrame(t *testing.T) {
	full := wire.Envelope{Kind: wire.KindHeartbeat, Corr: 7, Channel: "c", Packet: "p", TimeoutMs: 9, Code: 3,
		Payload: []byte("x"), Generation: 4, Revision: 5, Servers: map[string]uint16{"s": 1},
		Headroom: map[string]uint32{"c": 2}, Draining: true, Seq: 6}
	frames := []*wire.Frame{
		{Type: wire.FrameBatch, Batch: []wire.Envelope{full, full, full}},
		{Type: wire.FrameBatch, Batch: []wire.Envelope{{Kind: wire.KindReply, Corr: 1}, {Kind: wire.KindRequest}}},
		{Type: wire.FrameAuth, Auth: &wire.Auth{}},
		{Type: wire.FrameBatch, Batch: []wire.Envelope{{Kind: wire.KindGoodbye}}},
		{Type: wire.FrameBatch, Batch: []wire.Envelope{full, {Kind: wire.KindSend, Payload: []byte{}}, full, full, full}},
	}
	var f wire.Frame
	var buf []wire.Envelope
	for i, in := range frames {
		raw, err := wire.AppendFrame(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := wire.DecodeFrame(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.DecodeFrameInto(&f, raw, buf); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !reflect.DeepEqual(&f, want) {
			t.Fatalf("frame %d: DecodeFrameInto = %+v, DecodeFrame = %+v", i, f, *want)
		}
		if cap(f.Batch) > cap(buf) {
			buf = f.Batch[:0]
		}
		clear(f.Batch)
	}
	if _, err := wire.DecodeFrame([]byte{0x93, 0x01}); err == nil {
		t.Fatal("short frame decoded")
	}
	if err := wire.DecodeFrameInto(&f, []byte{0x93, 0x01}, buf); err == nil {
		t.Fatal("short frame decoded into")
	}
}

// TestDeadlineCtx_States walks a handler context through its states: no
// Done asked (released), Done after release, the deadline, the parent's
// end, and release after Done.
func TestDeadlineCtx_States(t *testing.T) {
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	far := time.Now().Add(time.Hour)

	c := &deadlineCtx{parent: context.Background(), deadline: far}
	if c.Err() != nil {
		t.Fatalf("fresh: Err = %v", c.Err())
	}
	c.release()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("released: Err = %v", c.Err())
	}
	if d := c.Done(); !closed(d) || c.Done() != d || !errors.Is(c.Err(), context.Canceled) {
		t.Fatal("Done after release: not closed, not stable, or wrong Err")
	}
	c.release()

	c = &deadlineCtx{parent: context.Background(), deadline: time.Now().Add(30 * time.Millisecond)}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("deadline never ended Done")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("after deadline: Err = %v", c.Err())
	}
	c.release()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("release after deadline changed Err to %v", c.Err())
	}

	parent, cancel := context.WithCancel(context.Background())
	c = &deadlineCtx{parent: parent, deadline: far}
	d := c.Done()
	if closed(d) {
		t.Fatal("Done closed early")
	}
	cancel()
	select {
	case <-d:
	case <-time.After(5 * time.Second):
		t.Fatal("parent's end never ended Done")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("after parent: Err = %v", c.Err())
	}
	c.release()

	c = &deadlineCtx{parent: context.Background(), deadline: far}
	d = c.Done()
	c.release()
	if !closed(d) || !errors.Is(c.Err(), context.Canceled) {
		t.Fatal("release after Done: not closed or wrong Err")
	}
	if c := (&deadlineCtx{parent: context.Background(), deadline: time.Now().Add(-time.Second)}); !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("past deadline: Err = %v", c.Err())
	}
}

// BenchmarkHotPath_Writer queues Request envelopes into a pipe writer whose
// transport discards the frames: the queueing and batching cost per
// envelope, with one submitting goroutine (a full lane is retried).
func BenchmarkHotPath_Writer(b *testing.B) {
	var frames, sent int
	w := newWriter(4096, func(f []byte) error { frames++; sent += len(f); return nil }, func(error) {})
	go w.run()
	e := wire.Envelope{Kind: wire.KindRequest, Corr: 1 << 40, Channel: "echo", Packet: "echo", TimeoutMs: 30000, Payload: make([]byte, 64)}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		for w.submit(e) != nil {
			runtime.Gosched()
		}
	}
	w.stop()
	<-w.done
	reportCPU(b, cpu0)
	b.ReportMetric(float64(b.N)/float64(max(frames, 1)), "envelopes/frame")
}

// TestWriter_LanesOrderLimitsAndStop checks the pipe writer's contract:
// each lane keeps its order, a raw frame goes alone after the control
// envelopes queued before it, a batch stays under maxBatch, the data lane
// is bounded by its HWM (ErrBusy) and the control lane by HWM+256 (the
// pipe is failed), and a stop flushes the control lane but not the data.
func TestWriter_LanesOrderLimitsAndStop(t *testing.T) {
	type sent struct {
		frame []byte // a raw frame, or
		envs  []wire.Envelope
	}
	var mu sync.Mutex
	var out []sent
	record := func(b []byte) error {
		f, err := wire.DecodeFrame(b)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || f.Type != wire.FrameBatch {
			out = append(out, sent{frame: append([]byte(nil), b...)})
			return nil
		}
		out = append(out, sent{envs: f.Batch})
		return nil
	}

	// Limits, with the loop not running.
	var failed []error
	w := newWriter(3, record, func(err error) { failed = append(failed, err) })
	for i := range 3 {
		if err := w.submit(wire.Envelope{Kind: wire.KindRequest, Corr: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.submit(wire.Envelope{Kind: wire.KindRequest}); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("submit into a full data lane = %v, want ErrBusy", err)
	}
	for range 3 + 256 {
		if err := w.control(outItem{env: wire.Envelope{Kind: wire.KindReply}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.control(outItem{env: wire.Envelope{Kind: wire.KindReply}}); !errors.Is(err, errSlowPeer) || len(failed) != 1 {
		t.Fatalf("control into a full lane = %v (onError %v), want errSlowPeer once", err, failed)
	}

	// Order and frames, with the loop running.
	w = newWriter(100000, record, func(err error) { t.Errorf("writer failed: %v", err) })
	w.maxBatch = 4096
	closed := make(chan struct{})
	w.closer = func() { close(closed) }
	payload := make([]byte, 100)
	const n = 3000
	go func() {
		for i := range n {
			if err := w.submit(wire.Envelope{Kind: wire.KindRequest, Corr: uint64(i + 1), Payload: payload}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	hello := []byte("raw-1")
	for i := range n {
		if i == n/2 {
			if err := w.control(outItem{frame: hello}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.control(outItem{env: wire.Envelope{Kind: wire.KindReply, Corr: uint64(100000 + i), Payload: payload}}); err != nil {
			t.Fatal(err)
		}
	}
	go w.run()
	waitUntil(t, "every envelope sent", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for _, s := range out {
			c += len(s.envs)
		}
		return c == 2*n
	})
	mu.Lock()
	var nextReq, nextRep uint64 = 1, 100000
	frameAt, largest := -1, 0
	for _, s := range out {
		if s.frame != nil {
			if string(s.frame) != "raw-1" || frameAt >= 0 {
				t.Fatalf("unexpected raw frame %q", s.frame)
			}
			frameAt = int(nextRep - 100000)
			continue
		}
		size := 0
		for _, e := range s.envs {
			size += e.Size()
			switch e.Kind {
			case wire.KindRequest:
				if e.Corr != nextReq {
					t.Fatalf("request %d sent where %d was next", e.Corr, nextReq)
				}
				nextReq++
			case wire.KindReply:
				if e.Corr != nextRep {
					t.Fatalf("reply %d sent where %d was next", e.Corr, nextRep)
				}
				nextRep++
			}
		}
		if len(s.envs) > 1 && size > w.maxBatch {
			t.Fatalf("a batch of %d bytes (limit %d)", size, w.maxBatch)
		}
		largest = max(largest, len(s.envs))
	}
	mu.Unlock()
	one := wire.Envelope{Kind: wire.KindReply, Corr: 100000, Payload: payload}
	if perLimit := w.maxBatch / one.Size(); largest < perLimit/2 {
		t.Fatalf("the largest batch held %d envelopes; %d queued ones fit in one", largest, perLimit)
	}
	if frameAt != n/2 {
		t.Fatalf("the raw frame went after %d control envelopes, want %d", frameAt, n/2)
	}

	// Stop: queued control items still go, queued data does not.
	mu.Lock()
	out = nil
	mu.Unlock()
	w.mu.Lock() // hold the loop off while both lanes fill
	w.data = append(w.data, wire.Envelope{Kind: wire.KindRequest, Corr: 7})
	w.ctl = append(w.ctl, outItem{env: wire.Envelope{Kind: wire.KindGoodbye}}, outItem{frame: []byte("raw-2")})
	w.mu.Unlock()
	w.stop()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not end after stop")
	}
	if err := w.submit(wire.Envelope{Kind: wire.KindRequest}); !errors.Is(err, wire.ErrPeerLost) {
		t.Fatalf("submit after stop = %v, want ErrPeerLost", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var goodbye, raw2 bool
	for _, s := range out {
		raw2 = raw2 || string(s.frame) == "raw-2"
		for _, e := range s.envs {
			goodbye = goodbye || e.Kind == wire.KindGoodbye
			if e.Kind == wire.KindRequest {
				t.Fatal("a data envelope was sent after stop")
			}
		}
	}
	if !goodbye || !raw2 {
		t.Fatalf("after stop: goodbye sent %v, raw frame sent %v; want both", goodbye, raw2)
	}
}
