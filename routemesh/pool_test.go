package routemesh

import (
	"context"
	"testing"
	"time"

	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/wire"
)

// poolOwner is an owner whose one Send handler blocks until release.
func poolOwner(entered chan<- struct{}, release <-chan struct{}) *ownerActor {
	n := &Node{cfg: &Config{}}
	sends := map[string]SendHandler{
		"block": func(*Context, []byte) { entered <- struct{}{}; <-release },
	}
	return &ownerActor{n: n, sends: sends, served: newServedStats("", nil, sends)}
}

func poolMsg() *inbound {
	return &inbound{env: wire.Envelope{Kind: wire.KindSend, Packet: "block"}, from: &link{}}
}

func TestHandlerPool_LimitTrimAndClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := newHandlerPool(ctx, 2)
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	o := poolOwner(entered, release)
	o.n.work.add()
	o.n.work.add()
	never := make(chan struct{})
	for range 2 {
		if !p.submit(poolJob{o: o, m: poolMsg()}, never) {
			t.Fatal("submit under the limit refused")
		}
	}
	<-entered
	<-entered
	if got := p.running(); got != 2 {
		t.Fatalf("running = %d, want 2", got)
	}
	// A third message waits for a worker: with done closed, it is handed
	// back unrun.
	done := make(chan struct{})
	close(done)
	if p.submit(poolJob{o: o, m: poolMsg()}, done) {
		t.Fatal("a third handler ran beside two at the limit")
	}
	// The third one is taken by the first worker to finish.
	o.n.work.add()
	third := make(chan bool)
	go func() { third <- p.submit(poolJob{o: o, m: poolMsg()}, never) }()
	release <- struct{}{}
	if !<-third {
		t.Fatal("the waiting message was not taken")
	}
	<-entered
	close(release)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := o.n.work.wait(wctx); err != nil {
		t.Fatal(err)
	}
	// The handlers are done; each worker goes idle just after (a worker
	// counts its job done before it parks): wait for that.
	for deadline := time.Now().Add(10 * time.Second); ; {
		p.mu.Lock()
		parked := p.workers == len(p.idle)
		p.mu.Unlock()
		if parked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the workers did not go idle within 10 s")
		}
		time.Sleep(time.Millisecond) // poll interval of a condition wait
	}
	// Two trims retire every idle worker (idle since before the first).
	p.trim()
	p.trim()
	p.mu.Lock()
	workers, idle := p.workers, len(p.idle)
	p.mu.Unlock()
	if workers != 0 || idle != 0 {
		t.Fatalf("after two trims: %d workers, %d idle; want none", workers, idle)
	}
	// A worker started afterwards leaves when the node ends (goleak checks).
	o.n.work.add()
	if !p.submit(poolJob{o: o, m: poolMsg()}, never) {
		t.Fatal("submit refused")
	}
	<-entered
	cancel()
}

func TestHandlerPool_QueueKeepsTheBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newHandlerPool(ctx, 1)
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	o := poolOwner(entered, release)
	q := mailbox.NewQuota(10, 0)
	never := make(chan struct{})
	admit := func() *inbound {
		m := poolMsg()
		if err := q.Admit(int64(m.Size())); err != nil {
			t.Fatal(err)
		}
		o.n.work.add()
		return m
	}
	first := poolMsg()
	o.n.work.add()
	if !p.submit(poolJob{o: o, m: first, q: q}, never) || first.kept {
		t.Fatal("a message run at once must leave its budget to the mailbox")
	}
	<-entered
	// The one worker is busy: the next message is queued at once (the
	// owner does not wait) and keeps its budget, so it still counts.
	second := admit()
	if !p.submit(poolJob{o: o, m: second, q: q}, never) || !second.kept {
		t.Fatal("the second message was not queued with its budget")
	}
	if d := q.Stats().Depth; d != 1 {
		t.Fatalf("depth with one message queued = %d, want 1", d)
	}
	// The queue (one place) is full: a third waits, and is handed back
	// unqueued when done closes.
	done := make(chan struct{})
	close(done)
	third := poolMsg()
	if p.submit(poolJob{o: o, m: third, q: q}, done) || third.kept {
		t.Fatal("a third message was queued beyond the queue's room")
	}
	close(release)
	<-entered // the worker took the queued one
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := o.n.work.wait(wctx); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Depth != 0 || st.Processed != 1 {
		t.Fatalf("after the queued message ran: depth %d, processed %d; want 0, 1", st.Depth, st.Processed)
	}
}
