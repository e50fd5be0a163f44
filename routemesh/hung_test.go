package routemesh

import (
	"context"
	"testing"
	"time"
)

func TestHungTracker_SlotsCountRunningAndOverdue(t *testing.T) {
	h := newHungTracker()
	var a, b, c runSlot
	for _, s := range []*runSlot{&a, &b, &c} {
		h.add(s)
	}
	now := time.Now().Add(time.Hour) // deadlines after slotEpoch
	a.start(now.Add(-time.Second))   // past its deadline
	b.start(now.Add(time.Second))
	if hung, running := h.overdue(now); hung != 1 || running != 2 {
		t.Fatalf("overdue = %d hung, %d running; want 1, 2", hung, running)
	}
	if got := h.running(); got != 2 {
		t.Fatalf("running = %d, want 2", got)
	}
	a.end()
	if hung, running := h.overdue(now); hung != 0 || running != 1 {
		t.Fatalf("after end: %d hung, %d running; want 0, 1", hung, running)
	}
	// A worker that leaves takes its slot with it, whatever it held.
	c.start(now.Add(-time.Minute))
	h.remove(&c)
	if hung, running := h.overdue(now); hung != 0 || running != 1 {
		t.Fatalf("after remove: %d hung, %d running; want 0, 1", hung, running)
	}
}

func TestHandlerPool_WorkersRegisterTheirSlots(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newHandlerPool(ctx, 2)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	o := poolOwner(entered, release)
	o.n.work.add()
	if !p.submit(poolJob{o: o, m: poolMsg()}, make(chan struct{})) {
		t.Fatal("submit refused")
	}
	<-entered
	if got := p.track.running(); got != 1 {
		t.Fatalf("running while the handler blocks = %d, want 1", got)
	}
	close(release)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := o.n.work.wait(wctx); err != nil {
		t.Fatal(err)
	}
	// The handler has returned: its slot is free.
	if got := p.track.running(); got != 0 {
		t.Fatalf("running after the handler returned = %d, want 0", got)
	}
}
