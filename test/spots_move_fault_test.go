package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/test/fault"
)

// Relocation failure cases on a real redis-server, each with a call
// ledger: every call ends once, by its deadline, with a reply or a typed
// error; the Spot ends up answering from exactly one owner (the record,
// the active Spots and the answers agree); per answer its epoch never goes
// back and one epoch is never answered by two owners; its counter — a
// ReplyAfterWrite kind, where nothing acknowledged may be lost, or the
// "every N" kind, where the last save is the bound — is never lost beyond
// that nor counted twice (a sequential caller's answers grow by 1 plus at
// most the calls of unknown outcome between them).

// mvRecoverBound bounds how long after a fault a Spot answers again.
const mvRecoverBound = 10 * time.Second

// mvFinish stops the loads, reads the Spot once more as the load's caller
// and checks the ledger and the load's sequence from base. It returns the
// errors by kind and the last answer.
func mvFinish(t *testing.T, l *mvLedger, cl *routemesh.Node, kind, id string, base int64, loads ...*mvLoop) (map[string]int, mvCall) {
	t.Helper()
	for _, lp := range loads {
		if !lp.stop() {
			t.Fatal("a call of the load did not end within 10 s of being stopped")
		}
	}
	last := l.call(cl, "load", "get", kind, id, 5*time.Second)
	if last.err != nil {
		t.Fatalf("%s/%s: final read: %v", kind, id, last.err)
	}
	errs := l.check(t)
	l.checkSeq(t, id, "load", base)
	return errs, last
}

// mvOneOwner checks that the Spot's record names the owner that answered
// last, under the epoch it answered with, and waits until that owner is
// the only one of servers listing the Spot as active. It returns how long
// another server still listed it (an activation that can no longer run a
// turn, e.g. one whose lease lapsed but was not fenced yet).
func mvOneOwner(t *testing.T, d location.SpotDirectory, kind, id string, last mvCall, servers ...*routemesh.Node) time.Duration {
	t.Helper()
	if rec := mvRecord(t, d, kind, id); rec.OwnerRID != last.owner || rec.Epoch != last.epoch {
		t.Errorf("%s/%s: recorded %s@%d, answered last by %s@%d", kind, id, rec.OwnerRID, rec.Epoch, last.owner, last.epoch)
	}
	start := time.Now()
	var on []string
	waitFor(t, kind+"/"+id+" active on its owner only", mvRecoverBound, func() bool {
		on = mvActiveOn(t, kind, id, servers...)
		return len(on) == 1 && on[0] == last.owner
	})
	return time.Since(start)
}

// TestSpotsMove_TargetDiesMidMove: Object Server A (in-process) moves a
// ReplyAfterWrite Spot, under a sequential caller's load, to Object
// Server T in a child process, and T is SIGKILLed:
//   - "after prepare": the Spot's last turn on A is held inside its save
//     (the snapshot trap) — T has answered the prepare and holds the
//     Spot's direct calls — then T is killed and the save goes on. A
//     saves and transfers the record to the dead T. The Spot must come
//     back on A (the only server left) once T's lease lapsed and A stopped
//     forwarding to T, under a higher epoch, with everything acknowledged.
//   - "before prepare": T is killed and the move starts at once: Move
//     fails, the Spot never left A (same epoch, nothing lost, no caller
//     error).
func TestSpotsMove_TargetDiesMidMove(t *testing.T) {
	type setup struct {
		l     *mvLedger
		dir   location.SpotDirectory
		acts  *spotsActivations
		a, cl *routemesh.Node
		child *childNode
		tgt   string
		x     mvCall // the Spot's 5th add
	}
	start := func(t *testing.T) *setup {
		t.Helper()
		addr, dir := spotsRedis(t)
		s := &setup{l: &mvLedger{}, dir: dir, acts: newSpotsActivations()}
		_, s.a = spotsNode(t, addr, "mvA", routemesh.ObjectServer, spotsFast, mvKinds(s.acts)...)
		s.child, s.tgt = startMoveChild(t, addr, "mvT")
		_, s.cl = spotsNode(t, addr, "mvC", routemesh.ObjectClient, spotsFast)
		mvNodes(t, 2, s.a, s.cl)
		spotsServersKnown(t, s.cl, s.a.RID(), s.tgt)
		spotsServersKnown(t, s.a, s.tgt)
		mine, _ := mvOwnedBy(t, s.l, s.cl, mvRaw, "td", s.a.RID(), 1)
		for range 4 {
			s.x = s.l.must(t, s.cl, "add", mvRaw, mine[0].id)
		}
		if s.x.value != 5 || s.x.owner != s.a.RID() {
			t.Fatalf("%s: 5 adds answered %d by %s", s.x.id, s.x.value, s.x.owner)
		}
		return s
	}

	t.Run("after prepare", func(t *testing.T) {
		s := start(t)
		id := s.x.id
		pre := s.l.loop(t, s.cl, "load", mvRaw, id, 2*time.Second)
		s.l.waitOK(t, "load", 20, mvRecoverBound)
		// No call may run while the trap is armed: only the move's save
		// may hit it.
		if !pre.stop() {
			t.Fatal("the load did not stop")
		}
		tr := armMvTrap(t, id)
		moved := make(chan error, 1)
		moveAt := time.Now()
		mctx := ctxT(t, 20*time.Second)
		go func() { moved <- spot.Move(mctx, s.a, mvRaw, id, s.tgt) }()
		tr.waitHit(t, 10*time.Second) // T prepared; the Spot's last turn is saving
		load := s.l.loop(t, s.cl, "load", mvRaw, id, 2*time.Second)
		killAt := time.Now()
		s.child.kill(t)
		tr.free()
		var moveErr error
		select {
		case moveErr = <-moved:
		case <-time.After(15 * time.Second):
			t.Fatal("Move did not return within 15 s")
		}
		moveTook := time.Since(moveAt)
		rec := mvRecord(t, s.dir, mvRaw, id)
		saved, savedEpoch, _ := mvSaved(t, s.dir, mvRaw, id)
		switch {
		case moveErr == nil && (rec.OwnerRID != s.tgt || rec.Epoch != s.x.epoch+1):
			t.Errorf("Move returned nil; the record is %s@%d, want the dead target %s@%d", rec.OwnerRID, rec.Epoch, s.tgt, s.x.epoch+1)
		case moveErr != nil && spotsErrKind(moveErr) == "untyped":
			t.Errorf("Move: untyped error %v", moveErr)
		}
		// The Spot comes back on a live owner (A: the only one left).
		var back mvCall
		waitFor(t, "the Spot answering again after the target died", mvRecoverBound, func() bool {
			var ok bool
			back, ok = s.l.firstOK(id, "load", killAt, s.tgt)
			return ok
		})
		s.l.waitOK(t, "load", 20, mvRecoverBound)
		errs, last := mvFinish(t, s.l, s.cl, mvRaw, id, 5, load)
		if back.owner != s.a.RID() || back.epoch <= rec.Epoch {
			t.Errorf("back on %s@%d; want %s above the transfer's epoch %d", back.owner, back.epoch, s.a.RID(), rec.Epoch)
		}
		if back.value <= saved {
			t.Errorf("the first answer after the fault counted %d; the move had saved %d", back.value, saved)
		}
		mvOneOwner(t, s.dir, mvRaw, id, last, s.a)
		s.acts.checkOnePerEpoch(t)
		var firstErr error
		for _, c := range s.l.snapshot() {
			if c.caller == "load" && c.issued.After(killAt) && c.err != nil {
				firstErr = c.err
				break
			}
		}
		t.Logf("Move returned after %v: %v; record %s@%d, saved %d@%d; back on %s@%d counting %d, %v after the kill; %d calls, errors %v (the first: %v)",
			moveTook.Round(time.Millisecond), moveErr, rec.OwnerRID, rec.Epoch, saved, savedEpoch, back.owner, back.epoch, back.value,
			back.done.Sub(killAt).Round(time.Millisecond), len(s.l.snapshot()), errs, firstErr)
	})

	t.Run("before prepare", func(t *testing.T) {
		s := start(t)
		id := s.x.id
		load := s.l.loop(t, s.cl, "load", mvRaw, id, 2*time.Second)
		s.l.waitOK(t, "load", 20, mvRecoverBound)
		s.child.kill(t)
		moveAt := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		moveErr := spot.Move(ctx, s.a, mvRaw, id, s.tgt)
		cancel()
		moveTook := time.Since(moveAt)
		if moveErr == nil {
			t.Fatal("a move to a killed target succeeded")
		}
		if spotsErrKind(moveErr) == "untyped" {
			t.Errorf("Move: untyped error %v", moveErr)
		}
		s.l.waitOK(t, "load", 20, mvRecoverBound)
		errs, last := mvFinish(t, s.l, s.cl, mvRaw, id, 5, load)
		if last.owner != s.a.RID() || last.epoch != s.x.epoch {
			t.Errorf("after a failed move: %s@%d, want unchanged %s@%d", last.owner, last.epoch, s.a.RID(), s.x.epoch)
		}
		if len(errs) != 0 {
			t.Errorf("callers saw errors %v though the Spot never left its owner", errs)
		}
		mvOneOwner(t, s.dir, mvRaw, id, last, s.a)
		s.acts.checkOnePerEpoch(t)
		t.Logf("Move failed after %v: %v; %d calls, errors %v", moveTook.Round(time.Millisecond), moveErr, len(s.l.snapshot()), errs)
	})
}

// TestSpotsMove_OwnerDiesMidMove: the owner of an "every N" Spot runs in
// a child process; it is told to move the Spot to Object Server B
// (in-process), and SIGKILLed while the move's last turn is inside its
// save (the snapshot trap: B has answered the prepare and holds the
// Spot's direct calls; the owner's calls wait in its kind actor). The
// save and the transfer never happen, so the record still names the dead
// owner and the snapshot is the last checkpoint. Then the Spot answers
// from B, under a higher epoch, counting on from that checkpoint (13
// acknowledged adds, saved at 10: the 3 since are the loss the kind
// allows), each call ending once with a reply or a typed error.
func TestSpotsMove_OwnerDiesMidMove(t *testing.T) {
	addr, dir := spotsRedis(t)
	acts := newSpotsActivations()
	_, b := spotsNode(t, addr, "mvB", routemesh.ObjectServer, spotsFast, mvKinds(acts)...)
	child, owner := startMoveChild(t, addr, "mvO")
	_, cl := spotsNode(t, addr, "mvC", routemesh.ObjectClient, spotsFast)
	mvNodes(t, 2, b, cl)
	spotsServersKnown(t, cl, b.RID(), owner)
	l := &mvLedger{}
	mine, _ := mvOwnedBy(t, l, cl, mvEvery, "od", owner, 1)
	x := mine[0]
	for range 12 {
		x = l.must(t, cl, "add", mvEvery, x.id)
	}
	if x.value != 13 || x.owner != owner {
		t.Fatalf("%s: 13 adds answered %d by %s", x.id, x.value, x.owner)
	}
	const checkpoint = 13 / mvN * mvN
	if v, _, _ := mvSaved(t, dir, mvEvery, x.id); v != checkpoint {
		t.Fatalf("%s: saved %d after 13 adds, want %d", x.id, v, checkpoint)
	}

	mvTell(t, child, "trap "+x.id)
	child.waitLine(t, "ARMED "+x.id)
	moveAt := time.Now()
	mvTell(t, child, "move "+mvEvery+" "+x.id+" "+b.RID())
	child.waitLine(t, "SAVING "+x.id) // B prepared; the owner's last turn is saving
	load := l.loop(t, cl, "load", mvEvery, x.id, 2*time.Second)
	issued := l.issued.Load()
	waitFor(t, "a call of the load issued", 5*time.Second, func() bool { return l.issued.Load() > issued })
	killAt := time.Now()
	child.kill(t)
	if rec := mvRecord(t, dir, mvEvery, x.id); rec.OwnerRID != owner || rec.Epoch != x.epoch {
		t.Fatalf("the record is %s@%d; the transfer must not have happened (%s@%d)", rec.OwnerRID, rec.Epoch, owner, x.epoch)
	}
	if v, _, _ := mvSaved(t, dir, mvEvery, x.id); v != checkpoint {
		t.Fatalf("saved %d, want the checkpoint %d: the move's save must not have happened", v, checkpoint)
	}
	var back mvCall
	waitFor(t, "the Spot answering from B", mvRecoverBound, func() bool {
		var ok bool
		back, ok = l.firstOK(x.id, "load", killAt, owner)
		return ok
	})
	l.waitOK(t, "load", 20, mvRecoverBound)
	errs, last := mvFinish(t, l, cl, mvEvery, x.id, checkpoint, load)
	if back.owner != b.RID() || back.epoch <= x.epoch {
		t.Errorf("back on %s@%d; want %s above the dead owner's epoch %d", back.owner, back.epoch, b.RID(), x.epoch)
	}
	mvOneOwner(t, dir, mvEvery, x.id, last, b)
	acts.checkOnePerEpoch(t)
	// Calls B held for the move and that ended (timed out) before B gave
	// up waiting for the dead owner still ran afterwards: the first answer
	// counts them.
	t.Logf("owner %s killed %v after the move began, in its last turn; back on %s@%d counting %d (checkpoint %d: %d earlier calls of unknown outcome ran) %v after the kill; %d calls, errors %v",
		owner, killAt.Sub(moveAt).Round(time.Millisecond), back.owner, back.epoch, back.value, checkpoint, back.value-checkpoint-1,
		back.done.Sub(killAt).Round(time.Millisecond), len(l.snapshot()), errs)
}

// TestSpotsMove_StoreUnreachableMidMove: Object Server A reaches Redis
// through a fault proxy; a sequential caller adds to its ReplyAfterWrite
// Spot. The proxy black-holes A's store link and A is told to move the
// Spot to B — "idle": with no call running, so the move's own save meets
// the dead link; "busy": under the load, so the move's last turn waits
// behind a turn whose save hangs. Either way:
//   - the move fails cleanly: Move returns an error;
//   - the link heals; the Spot answers again — from A once the store is
//     back, or from B if B claimed it after A's lease lapsed in Redis —
//     with everything acknowledged (ReplyAfterWrite), one epoch per owner,
//     epochs never going back per answer, one owner in the end, and no
//     overlap counted;
//   - then A is whole again: a move of the Spot between A and B succeeds
//     and carries the state.
func TestSpotsMove_StoreUnreachableMidMove(t *testing.T) {
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "busy"
		}
		t.Run(name, func(t *testing.T) { mvStoreCut(t, busy) })
	}
}

func mvStoreCut(t *testing.T, busy bool) {
	addr, dir := spotsRedis(t)
	proxy, err := fault.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	acts := newSpotsActivations()
	_, a := spotsNode(t, strings.TrimPrefix(proxy.Endpoint(), "tcp://"), "mvA", routemesh.ObjectServer, spotsFast, mvKinds(acts)...)
	_, b := spotsNode(t, addr, "mvB", routemesh.ObjectServer, spotsFast, mvKinds(acts)...)
	_, cl := spotsNode(t, addr, "mvC", routemesh.ObjectClient, spotsFast)
	mvNodes(t, 2, a, b, cl)
	spotsServersKnown(t, cl, a.RID(), b.RID())
	spotsServersKnown(t, a, b.RID())
	l := &mvLedger{}
	mine, _ := mvOwnedBy(t, l, cl, mvRaw, "su", a.RID(), 1)
	x := mine[0]
	for range 4 {
		x = l.must(t, cl, "add", mvRaw, x.id)
	}
	load := l.loop(t, cl, "load", mvRaw, x.id, 2*time.Second)
	l.waitOK(t, "load", 20, mvRecoverBound)
	if !busy && !load.stop() {
		t.Fatal("the load did not stop")
	}

	cutAt := time.Now()
	proxy.Partition()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	moveErr := spot.Move(ctx, a, mvRaw, x.id, b.RID())
	cancel()
	moveTook := time.Since(cutAt)
	if moveErr == nil {
		t.Fatal("a move succeeded while its source could not reach the store")
	}
	if !busy {
		load = l.loop(t, cl, "load", mvRaw, x.id, 2*time.Second)
	}
	// A's lease lapsed during the cut (it is 1 s): it must have stopped
	// answering; meanwhile B may have claimed the Spot.
	healAt := time.Now()
	mvHeal(proxy)
	var back mvCall
	waitFor(t, "the Spot answering after the heal", mvRecoverBound, func() bool {
		var ok bool
		back, ok = l.firstOK(x.id, "load", healAt, "")
		return ok
	})
	l.waitOK(t, "load", 20, mvRecoverBound)
	errs, last := mvFinish(t, l, cl, mvRaw, x.id, 5, load)
	lag := mvOneOwner(t, dir, mvRaw, x.id, last, a, b)
	acts.checkOnePerEpoch(t)
	var during []string // owner@epoch answering calls issued during the cut
	for _, c := range l.snapshot() {
		if c.err == nil && c.caller == "load" && c.issued.After(cutAt) && c.issued.Before(healAt) {
			if k := fmt.Sprintf("%s@%d", c.owner, c.epoch); len(during) == 0 || during[len(during)-1] != k {
				during = append(during, k)
			}
		}
	}
	stA, stB := spotsStats(t, a), spotsStats(t, b)
	if stA.Overlaps+stB.Overlaps != 0 {
		t.Errorf("overlaps counted: A %d, B %d", stA.Overlaps, stB.Overlaps)
	}

	// A is whole again: the Spot moves between A and B with its state.
	waitFor(t, "A's lease valid again", mvRecoverBound, func() bool { return spotsStats(t, a).LeaseValid })
	spotsServersKnown(t, a, b.RID())
	spotsServersKnown(t, b, a.RID())
	from, to := a, b
	if last.owner == b.RID() {
		from, to = b, a
	}
	if err := spot.Move(ctxT(t, 10*time.Second), from, mvRaw, x.id, to.RID()); err != nil {
		t.Fatalf("a move after the heal: %v", err)
	}
	if c := l.must(t, cl, "add", mvRaw, x.id); c.value != last.value+1 || c.owner != to.RID() || c.epoch <= last.epoch {
		t.Errorf("after the move %s → %s: %d by %s@%d; want %d by %s above epoch %d", from.RID(), to.RID(), c.value, c.owner, c.epoch,
			last.value+1, to.RID(), last.epoch)
	}
	t.Logf("Move failed %v after the cut (%s): %v; answered during the cut by %v; again %v after the heal by %s@%d; ends on %s@%d with %d; the other server listed it %v longer; %d calls, errors %v",
		moveTook.Round(time.Millisecond), spotsErrKind(moveErr), moveErr, during, back.done.Sub(healAt).Round(time.Millisecond), back.owner, back.epoch,
		last.owner, last.epoch, last.value, lag.Round(time.Millisecond), len(l.snapshot()), errs)
}

// mvHeal ends a Partition of a store link as a partition that broke the
// connections living through it: they are gone (the held bytes with
// them), not resumed. So: close every connection (those opened during the
// partition too), pass bytes again, and close any opened in between.
func mvHeal(p *fault.Proxy) {
	p.Reset()
	p.Heal()
	p.Reset()
}
