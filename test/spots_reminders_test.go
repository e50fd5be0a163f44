package test

// Durable reminders across processes: an Object Server in a child
// process owns reminded Spots and is SIGKILLed — once while a firing's
// handler ran and before the write that moves the reminder on (the crash
// the at-least-once guarantee is about); the next owner fires the same due
// time again, in a later epoch; no due time ever fires twice within one
// owner epoch. On a standalone redis-server and on a Redis Cluster.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

const (
	remKindName = "alarm"
	remLogPkt   = "remlog"
	// remStall is the reminder the child's handler never finishes: it
	// logs the firing and blocks until the process is killed.
	remStall = "stall"
)

// remCfg: a short lease, a fast scan.
var remCfg = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond,
	ReminderScan: 100 * time.Millisecond}

var remTouch = wire.NewPacket[struct{}, struct{}]("touch")

type remState struct{ N int }

// remKind is the reminded kind; log is where each firing is recorded
// (an error: the firing is tried again); stall makes the reminder remStall
// block forever.
func remKind(log func(c *spot.Context, r spot.Reminder) error, stall bool) *spot.Kind[remState] {
	k := spot.NewKind(remKindName, func(string) *remState { return &remState{} })
	spot.On(k, remTouch, func(*spot.Context, *remState, struct{}) (struct{}, error) { return struct{}{}, nil })
	k.OnReminder(func(c *spot.Context, s *remState, r spot.Reminder) error {
		if err := log(c, r); err != nil {
			return err
		}
		s.N++
		if stall && r.Name == remStall {
			select {} // killed here: fired, never moved on
		}
		return nil
	})
	return k
}

// remFiring is one logged firing: "id name dueMs epoch rid".
type remFiring struct {
	id, name, rid string
	due           int64
	epoch         uint64
}

func remLine(c *spot.Context, r spot.Reminder) string {
	return fmt.Sprintf("%s %s %d %d %s", c.ID, r.Name, r.Due.UnixMilli(), c.Epoch, c.Node.RID())
}

func parseRemLine(s string) (remFiring, bool) {
	f := strings.Fields(s)
	if len(f) != 5 {
		return remFiring{}, false
	}
	due, err1 := strconv.ParseInt(f[2], 10, 64)
	ep, err2 := strconv.ParseUint(f[3], 10, 64)
	return remFiring{id: f[0], name: f[1], due: due, epoch: ep, rid: f[4]}, err1 == nil && err2 == nil
}

// remLog collects the firings of every node: in-process ones directly,
// the child's by a direct request to the logging node.
type remLog struct {
	mu  sync.Mutex
	all []remFiring
}

func (l *remLog) add(line string) error {
	f, ok := parseRemLine(line)
	if !ok {
		return fmt.Errorf("bad line %q", line)
	}
	l.mu.Lock()
	l.all = append(l.all, f)
	l.mu.Unlock()
	return nil
}

func (l *remLog) where(pred func(remFiring) bool) []remFiring {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []remFiring
	for _, f := range l.all {
		if pred(f) {
			out = append(out, f)
		}
	}
	return out
}

// noneTwice: a due time of a reminder fires at most once per epoch.
func (l *remLog) noneTwice(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, f := range l.all {
		k := fmt.Sprintf("%s/%s/%d/%d", f.id, f.name, f.due, f.epoch)
		if seen[k] {
			t.Errorf("reminder %s of %s fired twice for due %d in epoch %d (%s)", f.name, f.id, f.due, f.epoch, f.rid)
		}
		seen[k] = true
	}
}

func init() {
	if os.Getenv("ZLINK_REM_CHILD") == "1" {
		runRemChild()
	}
}

// runRemChild is an Object Server hosting the reminded kind on the Redis
// (or Redis Cluster) of $ZLINK_REM_URL with key prefix $ZLINK_REM_KEYS;
// its firings go to node $ZLINK_REM_LOG; the reminder remStall stalls.
func runRemChild() {
	log := zerolog.Nop()
	if os.Getenv("ZLINK_TEST_LOG") != "" {
		log = zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Int("pid", os.Getpid()).Logger()
	}
	cfg, err := location.ParseRedisURL(os.Getenv("ZLINK_REM_URL"))
	if err != nil {
		childFail(err)
	}
	cfg.Prefix, cfg.PollInterval, cfg.DialTimeout, cfg.OpTimeout = os.Getenv("ZLINK_REM_KEYS"), 100*time.Millisecond, time.Second, 2*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	store, err := location.NewRedis(ctx, cfg)
	if err != nil {
		childFail(err)
	}
	logRID := os.Getenv("ZLINK_REM_LOG")
	var n *routemesh.Node
	logFn := func(c *spot.Context, r spot.Reminder) error {
		_, err := n.CallNode(c, logRID, remLogPkt, []byte(remLine(c, r)))
		return err
	}
	o := zlink.NewOptions().SetLogger(log).SetLocationStore(store)
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix("osK").
		ConfigureLiveness(spotsLiveness).ConfigureDiscovery(fastDiscovery).SetObjectRole(routemesh.ObjectServer)
	spot.EnableWith(b, remCfg, remKind(logFn, true))
	h, err := zlink.Start(ctx, o)
	if err == nil {
		n = h.Mesh(autoMesh)
		err = spot.WaitReady(ctx, n)
	}
	cancel()
	if err != nil {
		childFail(err)
	}
	childServe(n)
}

// remNode starts an in-process node on its own store; a server hosts the
// reminded kind (logging into l), a node without object role logs what
// the child sends.
func remNode(t *testing.T, store location.Store, prefix string, role routemesh.ObjectRole, l *remLog) *routemesh.Node {
	t.Helper()
	o := zlink.NewOptions().SetLocationStore(store)
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(spotsLiveness).
		ConfigureDiscovery(fastDiscovery).SetObjectRole(role)
	switch role {
	case routemesh.ObjectServer:
		spot.EnableWith(b, remCfg, remKind(func(c *spot.Context, r spot.Reminder) error { return l.add(remLine(c, r)) }, false))
	case routemesh.ObjectClient:
		spot.EnableWith(b, remCfg)
	default:
		b.HandleDirectRequest(remLogPkt, func(_ *routemesh.Context, p []byte) ([]byte, error) { return nil, l.add(string(p)) })
	}
	return startHost(t, o).Mesh(autoMesh)
}

// testRemindersOwnerKilled runs the scenario on the store URL (key prefix
// keys); open opens a store of the test's own on it.
func testRemindersOwnerKilled(t *testing.T, url, keys string, open func() location.Store) {
	l := &remLog{}
	logger := remNode(t, open(), "log", routemesh.ObjectNone, l)
	oc := remNode(t, open(), "oc", routemesh.ObjectClient, l)
	osA := remNode(t, open(), "osA", routemesh.ObjectServer, l)
	child, victim := startRIDChild(t, "reminder child", "ZLINK_REM_CHILD=1", "ZLINK_REM_URL="+url, "ZLINK_REM_KEYS="+keys, "ZLINK_REM_LOG="+logger.RID())
	spotsReady(t, oc, osA)
	if err := logger.WaitPeers(ctxT(t, 15*time.Second), 3); err != nil {
		t.Fatal(err)
	}
	spotsServersKnown(t, oc, osA.RID(), victim)
	spotsServersKnown(t, osA, victim)
	ctx := ctxT(t, 60*time.Second)

	// Spots owned by the child: touch IDs until a few answer from it.
	var mine, other []string
	for i := 0; len(mine) < 4 && i < 200; i++ {
		id := fmt.Sprintf("r-%d", i)
		body, _ := remTouch.EncodeRequest(struct{}{})
		_, res, err := spot.CallRaw(ctx, oc, remKindName, id, remTouch.Name(), body)
		if err != nil {
			t.Fatalf("touch %s: %v", id, err)
		}
		if res.Owner == victim {
			mine = append(mine, id)
		} else if len(other) < 2 {
			other = append(other, id)
		}
	}
	if len(mine) < 4 {
		t.Fatalf("no Spot placed on the child among 200 IDs")
	}
	// Each reminded Spot ticks every second; the first of the child's
	// also has the stalling reminder.
	for _, id := range append(append([]string(nil), mine...), other...) {
		if err := spot.RegisterReminder(ctx, oc, remKindName, id, spot.Reminder{Name: "tick", Period: spot.MinReminderPeriod}); err != nil {
			t.Fatal(err)
		}
	}
	stalled := mine[0]
	if err := spot.RegisterReminder(ctx, oc, remKindName, stalled, spot.Reminder{Name: remStall, Due: time.Now().Add(500 * time.Millisecond), Period: time.Hour}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child fired the stalling reminder and ticks", 20*time.Second, func() bool {
		return len(l.where(func(f remFiring) bool { return f.rid == victim && f.name == remStall })) == 1 &&
			len(l.where(func(f remFiring) bool { return f.rid == victim && f.name == "tick" })) >= 2
	})
	first := l.where(func(f remFiring) bool { return f.name == remStall })[0]
	child.kill(t)
	killed := time.Now()

	// The stalled due time fires again on the next owner, in a later epoch.
	waitFor(t, "the stalled firing again on the next owner", 20*time.Second, func() bool {
		return len(l.where(func(f remFiring) bool { return f.name == remStall && f.rid == osA.RID() })) >= 1
	})
	again := l.where(func(f remFiring) bool { return f.name == remStall && f.rid == osA.RID() })[0]
	if again.due != first.due || again.epoch <= first.epoch {
		t.Fatalf("after the kill the stalled reminder fired for due %d at epoch %d; first for due %d at epoch %d",
			again.due, again.epoch, first.due, first.epoch)
	}
	// Every Spot of the child ticks again on the survivor.
	for _, id := range mine {
		waitFor(t, id+" ticking on the survivor", 20*time.Second, func() bool {
			return len(l.where(func(f remFiring) bool { return f.id == id && f.name == "tick" && f.rid == osA.RID() })) >= 1
		})
	}
	t.Logf("re-fired %v after the kill", time.Since(killed))
	// The survivor's own Spots go on ticking.
	for _, id := range other {
		waitFor(t, id+" ticking twice", 20*time.Second, func() bool {
			return len(l.where(func(f remFiring) bool { return f.id == id })) >= 2
		})
	}
	l.noneTwice(t)
}

// TestSpots_ReminderOwnerKilled: standalone redis-server.
func TestSpots_ReminderOwnerKilled(t *testing.T) {
	srv, _ := redisStore(t)
	testRemindersOwnerKilled(t, "redis://"+srv.Addr(), "zlink", func() location.Store { return openRedis(t, srv.Addr()) })
}

// TestSpots_ReminderOwnerKilledCluster: a 3-master Redis Cluster (the
// records and the index parts spread over slots).
func TestSpots_ReminderOwnerKilledCluster(t *testing.T) {
	c := locationtest.StartRedisCluster(t)
	prefix := newClusterKeyPrefix()
	testRemindersOwnerKilled(t, c.URL(), prefix, func() location.Store { return clusterStore(t, c, prefix) })
}
