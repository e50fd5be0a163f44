package test

// Helpers of the Spot move-failure tests (spots_move_*_test.go): two
// persistent counter kinds on a real redis-server, a trap that holds a
// Spot's next snapshot encoding (the save in a move's last turn, which
// runs only after the target prepared), an Object Server in a child
// process that can be told to move a Spot and to trap its save, and a
// ledger of every call.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// The kinds: the same counter, persisted two ways.
const (
	mvEvery = "mv-every" // saved every mvN messages; the reply goes out before the save
	mvRaw   = "mv-raw"   // ReplyAfterWrite: saved before every reply
	mvN     = 5
)

var (
	mvAdd = wire.NewPacket[int64, int64]("mv-add")
	mvGet = wire.NewPacket[struct{}, int64]("mv-get")
)

// mvState is a counter Spot's state. It encodes itself so that a test can
// hold the save of one Spot (mvTrap).
type mvState struct {
	ID string
	N  int64
}

func (s *mvState) EncodeMsgpack(e *msgpack.Encoder) error {
	mvTrapHit(s.ID)
	if err := e.EncodeString(s.ID); err != nil {
		return err
	}
	return e.EncodeInt(s.N)
}

func (s *mvState) DecodeMsgpack(d *msgpack.Decoder) error {
	var err error
	if s.ID, err = d.DecodeString(); err != nil {
		return err
	}
	s.N, err = d.DecodeInt64()
	return err
}

// mvKind is a counter kind named name with persistence p; acts (nil:
// none) records its activations.
func mvKind(name string, p spot.Persistence, acts *spotsActivations) *spot.Kind[mvState] {
	k := spot.NewKind(name, func(id string) *mvState { return &mvState{ID: id} })
	spot.On(k, mvAdd, func(_ *spot.Context, s *mvState, n int64) (int64, error) { s.N += n; return s.N, nil })
	spot.On(k, mvGet, func(_ *spot.Context, s *mvState, _ struct{}) (int64, error) { return s.N, nil })
	if acts != nil {
		k.OnActivate(func(c *spot.Context, _ *mvState) error { acts.record(c); return nil })
	}
	return k.Persist(p)
}

// mvKinds are both kinds, as every Object Server of these tests hosts
// them. IDs are unique across the two kinds (acts keys by ID).
func mvKinds(acts *spotsActivations) []spot.Registration {
	return []spot.Registration{
		mvKind(mvEvery, spot.Persistence{Version: 1, Every: mvN}, acts),
		mvKind(mvRaw, spot.Persistence{Version: 1, ReplyAfterWrite: true}, acts),
	}
}

// mvTrap holds the next snapshot encoding of one Spot in this process:
// hit closes when that save began, and the save goes on once release is
// closed. Only a save encodes a snapshot, so with no call running on the
// Spot the next encoding is the one of a move's last turn — which the
// Spot runs only after the target answered the prepare.
type mvTrap struct {
	id      string
	hit     chan struct{}
	release chan struct{}
	once    sync.Once
}

var mvTrapped atomic.Pointer[mvTrap]

// armMvTrap arms the trap for Spot id; it is released at cleanup at the
// latest.
func armMvTrap(t *testing.T, id string) *mvTrap {
	t.Helper()
	tr := &mvTrap{id: id, hit: make(chan struct{}), release: make(chan struct{})}
	if !mvTrapped.CompareAndSwap(nil, tr) {
		t.Fatal("a snapshot trap is already armed")
	}
	t.Cleanup(func() { mvTrapped.CompareAndSwap(tr, nil); tr.free() })
	return tr
}

func (tr *mvTrap) free() { tr.once.Do(func() { close(tr.release) }) }

// waitHit waits (with a deadline) for the trapped save to begin.
func (tr *mvTrap) waitHit(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-tr.hit:
	case <-time.After(d):
		t.Fatalf("the save of %s did not begin within %v", tr.id, d)
	}
}

func mvTrapHit(id string) {
	tr := mvTrapped.Load()
	if tr == nil || tr.id != id || !mvTrapped.CompareAndSwap(tr, nil) {
		return
	}
	close(tr.hit)
	<-tr.release
}

// The move child: the test binary re-executed with
// ZLINK_SPOTS_MOVE_CHILD=1 runs an Object Server hosting mvKinds instead
// of the tests.
func init() {
	if os.Getenv("ZLINK_SPOTS_MOVE_CHILD") == "1" {
		runMoveChild()
	}
}

// runMoveChild runs an automatic Object Server (prefix
// $ZLINK_SPOTS_MOVE_PREFIX) hosting mvKinds with the short lease, on the
// Redis at $ZLINK_SPOTS_MOVE_REDIS. Once it can serve Spots it prints
// "READY <rid> <endpoint>", then reads commands from stdin, one a line:
//
//	trap <id>            arm the snapshot trap for <id>: prints "ARMED <id>",
//	                     and "SAVING <id>" when that save begins (it then
//	                     blocks until the process is killed)
//	move <kind> <id> <to> once <to> is a ready peer, spot.Move, then
//	                     prints "MOVED <id> ok" or "MOVED <id> error <text>"
//
// It exits when stdin closes (the parent test is gone) or when killed.
func runMoveChild() {
	log := zerolog.Nop()
	if os.Getenv("ZLINK_TEST_LOG") != "" {
		log = zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Int("pid", os.Getpid()).Logger()
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	store, err := location.NewRedis(ctx, location.RedisConfig{Addr: os.Getenv("ZLINK_SPOTS_MOVE_REDIS"), PollInterval: 100 * time.Millisecond,
		DialTimeout: time.Second, OpTimeout: time.Second})
	if err != nil {
		say("FAILED %v", err)
		os.Exit(2)
	}
	o := zlink.NewOptions().SetLogger(log).SetLocationStore(store)
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(os.Getenv("ZLINK_SPOTS_MOVE_PREFIX")).
		ConfigureLiveness(spotsLiveness).ConfigureDiscovery(fastDiscovery).SetObjectRole(routemesh.ObjectServer)
	spot.EnableWith(b, spotsFast, mvKinds(nil)...)
	h, err := zlink.Start(ctx, o)
	if err == nil {
		err = spot.WaitReady(ctx, h.Mesh(autoMesh))
	}
	cancel()
	if err != nil {
		say("FAILED %v", err)
		os.Exit(2)
	}
	n := h.Mesh(autoMesh)
	say("READY %s %s", n.RID(), n.Endpoint())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "trap":
			tr := &mvTrap{id: f[1], hit: make(chan struct{}), release: make(chan struct{})}
			mvTrapped.Store(tr)
			go func() { <-tr.hit; say("SAVING %s", tr.id) }()
			say("ARMED %s", tr.id)
		case len(f) == 4 && f[0] == "move":
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				// This node may not have seen the target yet.
				for ready, _ := n.PeerReady(f[3]); !ready && ctx.Err() == nil; ready, _ = n.PeerReady(f[3]) {
					time.Sleep(5 * time.Millisecond)
				}
				if err := spot.Move(ctx, n, f[1], f[2], f[3]); err != nil {
					say("MOVED %s error %v", f[2], err)
					return
				}
				say("MOVED %s ok", f[2])
			}()
		default:
			say("UNKNOWN %q", sc.Text())
		}
	}
	os.Exit(0)
}

// startMoveChild starts the move child on the Redis at redisAddr and
// returns it with its RID. It is killed at cleanup.
func startMoveChild(t *testing.T, redisAddr, prefix string) (*childNode, string) {
	t.Helper()
	c, f := runChild(t, "spots move child", "ZLINK_SPOTS_MOVE_CHILD=1", "ZLINK_SPOTS_MOVE_REDIS="+redisAddr, "ZLINK_SPOTS_MOVE_PREFIX="+prefix)
	if len(f) != 2 {
		t.Fatalf("spots move child: READY line %q", f)
	}
	c.endpoint = f[1]
	return c, f[0]
}

// mvTell writes one command line to the move child.
func mvTell(t *testing.T, c *childNode, line string) {
	t.Helper()
	if err := c.WriteLine(line); err != nil {
		t.Fatalf("to the child: %v", err)
	}
}

// mvNodes waits until each node sees peers other ready peers and can
// serve Spot calls (a child counts as a peer).
func mvNodes(t *testing.T, peers int, nodes ...*routemesh.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := n.WaitPeers(ctxT(t, 15*time.Second), peers); err != nil {
			t.Fatalf("%s: peers: %v", n.RID(), err)
		}
		if err := spot.WaitReady(ctxT(t, 15*time.Second), n); err != nil {
			t.Fatalf("%s: %v", n.RID(), err)
		}
	}
}

// mvCall is one call of a ledger, as it ended.
type mvCall struct {
	spotsCallRec
	kind, caller string
	op           string // "add" (adds 1) or "get"
	timeout      time.Duration
}

// mvLedger records every call the test makes: each issued call must end
// exactly once, by its deadline, with a reply or a typed error.
type mvLedger struct {
	issued atomic.Int64
	mu     sync.Mutex
	calls  []mvCall
}

// call makes one call (op "add" adds 1, "get" reads) to Spot (kind, id)
// through node n and records it.
func (l *mvLedger) call(n *routemesh.Node, caller, op, kind, id string, timeout time.Duration) mvCall {
	l.issued.Add(1)
	c := mvCall{spotsCallRec: spotsCallRec{id: id, issued: time.Now()}, kind: kind, caller: caller, op: op, timeout: timeout}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	var out []byte
	var res spot.Result
	var err error
	switch op {
	case "add":
		var b []byte
		if b, err = mvAdd.EncodeRequest(1); err == nil {
			out, res, err = spot.CallRaw(ctx, n, kind, id, mvAdd.Name(), b)
		}
		if err == nil {
			c.value, err = mvAdd.DecodeReply(out)
		}
	default:
		var b []byte
		if b, err = mvGet.EncodeRequest(struct{}{}); err == nil {
			out, res, err = spot.CallRaw(ctx, n, kind, id, mvGet.Name(), b)
		}
		if err == nil {
			c.value, err = mvGet.DecodeReply(out)
		}
	}
	cancel()
	c.done, c.err, c.owner, c.epoch = time.Now(), err, res.Owner, res.Epoch
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	return c
}

// must is call for a step the test needs to succeed.
func (l *mvLedger) must(t *testing.T, n *routemesh.Node, op, kind, id string) mvCall {
	t.Helper()
	c := l.call(n, "test", op, kind, id, 5*time.Second)
	if c.err != nil {
		t.Fatalf("%s %s/%s: %v", op, kind, id, c.err)
	}
	return c
}

// snapshot returns the calls that ended so far.
func (l *mvLedger) snapshot() []mvCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]mvCall(nil), l.calls...)
}

// firstOK returns the first successful call to id by caller issued after
// since that an owner other than not answered.
func (l *mvLedger) firstOK(id, caller string, since time.Time, not string) (mvCall, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.calls {
		if c.id == id && c.caller == caller && c.err == nil && c.owner != not && c.issued.After(since) {
			return c, true
		}
	}
	return mvCall{}, false
}

// okCount counts the successful calls of caller.
func (l *mvLedger) okCount(caller string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.caller == caller && c.err == nil {
			n++
		}
	}
	return n
}

// waitOK waits until caller has n more successful calls.
func (l *mvLedger) waitOK(t *testing.T, caller string, n int, d time.Duration) {
	t.Helper()
	base := l.okCount(caller)
	waitFor(t, fmt.Sprintf("%d more answers to %s", n, caller), d, func() bool { return l.okCount(caller) >= base+n })
}

// check verifies every call: it ended once, by its deadline (+ slack),
// with a reply or a typed error. It returns the errors by kind.
func (l *mvLedger) check(t *testing.T) map[string]int {
	t.Helper()
	calls := l.snapshot()
	if int64(len(calls)) != l.issued.Load() {
		t.Errorf("%d calls issued, %d ended", l.issued.Load(), len(calls))
	}
	errs := map[string]int{}
	for _, c := range calls {
		if d := c.done.Sub(c.issued); d > c.timeout+time.Second {
			t.Errorf("%s/%s %s: took %v, past its %v deadline (%v)", c.kind, c.id, c.op, d, c.timeout, c.err)
		}
		if c.err == nil {
			continue
		}
		k := spotsErrKind(c.err)
		errs[k]++
		if k == "untyped" {
			t.Errorf("%s/%s %s: untyped error %v", c.kind, c.id, c.op, c.err)
		}
	}
	return errs
}

// checkSeq checks the calls of one sequential caller of Spot id, starting
// from the value base: the successful ones never see the counter go back
// or stand still after an add (nothing acknowledged lost, no second
// activation counting from an older state), and it never grows by more
// than the calls between them that failed (each may or may not have run:
// nothing counted twice). It returns the last value seen.
func (l *mvLedger) checkSeq(t *testing.T, id, caller string, base int64) int64 {
	t.Helper()
	prev, unknown := base, int64(0)
	var adds []spotsCallRec
	for _, c := range l.snapshot() {
		if c.id != id || c.caller != caller {
			continue
		}
		if c.err != nil {
			if c.op == "add" {
				unknown++
			}
			continue
		}
		lo, hi := prev, prev+unknown
		if c.op == "add" {
			lo, hi = lo+1, hi+1
			adds = append(adds, c.spotsCallRec)
		}
		if c.value < lo || c.value > hi {
			t.Errorf("%s (%s): %s answered %d by %s@%d; after %d with %d calls of unknown outcome it must be in [%d, %d]",
				id, caller, c.op, c.value, c.owner, c.epoch, prev, unknown, lo, hi)
		}
		prev, unknown = c.value, 0
	}
	checkSpotReplies(t, id, adds)
	return prev
}

// mvLoop is a sequential caller adding 1 to one Spot until stopped (at
// the latest after a minute, or at cleanup).
type mvLoop struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func (l *mvLedger) loop(t *testing.T, n *routemesh.Node, caller, kind, id string, timeout time.Duration) *mvLoop {
	lp := &mvLoop{quit: make(chan struct{}), done: make(chan struct{})}
	end := time.Now().Add(time.Minute)
	go func() {
		defer close(lp.done)
		for time.Now().Before(end) {
			select {
			case <-lp.quit:
				return
			default:
			}
			if c := l.call(n, caller, "add", kind, id, timeout); c.err != nil {
				// Load shaping, not a wait for correctness: a call that
				// fails at once (no owner yet) would otherwise spin.
				select {
				case <-lp.quit:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}()
	t.Cleanup(func() { lp.stop() })
	return lp
}

// stop ends the loop and waits for its call in flight: false if it has
// not ended within 10 s.
func (lp *mvLoop) stop() bool {
	lp.once.Do(func() { close(lp.quit) })
	select {
	case <-lp.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// mvRecord reads a Spot's ownership record.
func mvRecord(t *testing.T, d location.SpotDirectory, kind, id string) location.Ownership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := d.SpotRecord(ctx, autoMesh, kind, id)
	if err != nil {
		t.Fatalf("spot record %s/%s: %v", kind, id, err)
	}
	return rec
}

// mvSaved reads a Spot's persisted counter (0 and false: none saved).
func mvSaved(t *testing.T, d location.SpotDirectory, kind, id string) (int64, uint64, bool) {
	t.Helper()
	st, ok := d.(location.SpotStates)
	if !ok {
		t.Fatalf("the store %T keeps no Spot state", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := st.GetSpotState(ctx, autoMesh, kind, id)
	if errors.Is(err, location.ErrNotFound) {
		return 0, 0, false
	}
	if err != nil {
		t.Fatalf("spot state %s/%s: %v", kind, id, err)
	}
	var v mvState
	if err := msgpack.Unmarshal(s.Data, &v); err != nil {
		t.Fatalf("spot state %s/%s: %v", kind, id, err)
	}
	return v.N, s.Epoch, true
}

// mvActiveOn lists the nodes among servers on which Spot (kind, id) is
// active.
func mvActiveOn(t *testing.T, kind, id string, servers ...*routemesh.Node) []string {
	t.Helper()
	var on []string
	for _, n := range servers {
		ids, err := spot.Active(n, kind, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", n.RID(), err)
		}
		for _, x := range ids {
			if x == id {
				on = append(on, n.RID())
			}
		}
	}
	return on
}

// mvOwnedBy finds want Spots of kind that the first call through n puts
// on owner (IDs prefix-0, prefix-1, …); every Spot tried counts 1 and is
// returned in others when another server took it.
func mvOwnedBy(t *testing.T, l *mvLedger, n *routemesh.Node, kind, prefix, owner string, want int) (mine, others []mvCall) {
	t.Helper()
	for i := 0; len(mine) < want; i++ {
		if i >= 40*want {
			t.Fatalf("%d of %d Spots of %s landed on %s", len(mine), i, kind, owner)
		}
		c := l.must(t, n, "add", kind, fmt.Sprintf("%s-%d", prefix, i))
		if c.value != 1 {
			t.Fatalf("%s: a fresh Spot counted %d", c.id, c.value)
		}
		if c.owner == owner {
			mine = append(mine, c)
		} else {
			others = append(others, c)
		}
	}
	return mine, others
}
