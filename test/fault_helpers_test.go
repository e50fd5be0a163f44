package test

// Helpers of the fault scenarios: goroutine accounting after recovery,
// a ledger that must see no error, and an automatic Server node in a child
// process (killed with SIGKILL, restarted under a new RID).

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// goroutineMargin is how many goroutines above its baseline a scenario
// may keep after recovery (timers and runtime helpers that come and go).
const goroutineMargin = 16

// goroutinesBack waits (with a deadline) until the process runs no more
// than base+goroutineMargin goroutines, and reports how many it ran.
func goroutinesBack(t *testing.T, base int) int {
	t.Helper()
	var n int
	waitFor(t, fmt.Sprintf("goroutines back to about %d", base), 15*time.Second, func() bool {
		n = runtime.NumGoroutine()
		return n <= base+goroutineMargin
	})
	return n
}

// noErrors fails the test when any call of l ended with an error.
func (l *ledger) noErrors(t *testing.T, who string) {
	t.Helper()
	if a := l.Account(); len(a.Errs) > 0 || len(a.Untyped) > 0 {
		t.Fatalf("%s: calls failed: %v (untyped %d)", who, a.Errs, len(a.Untyped))
	}
}

// served is the number of calls of l answered by rid.
func (l *ledger) served(rid string) int { return l.Served(rid) }

func init() {
	if os.Getenv("ZLINK_FAULT_AUTO_SERVER") == "1" {
		runFaultAutoServer()
	}
}

// runFaultAutoServer runs an automatic Server of channel "echo" (RID
// prefix $ZLINK_FAULT_PREFIX, a fresh RID each start) on the Redis at
// $ZLINK_FAULT_REDIS, prints "READY <rid> <endpoint>" and runs until
// killed or until stdin closes.
func runFaultAutoServer() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	store, err := location.NewRedis(ctx, location.RedisConfig{Addr: os.Getenv("ZLINK_FAULT_REDIS"), PollInterval: 100 * time.Millisecond,
		DialTimeout: time.Second, OpTimeout: time.Second})
	if err != nil {
		childFail(err)
	}
	o := zlink.NewOptions().SetLogger(zerolog.Nop()).SetLocationStore(store)
	o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(os.Getenv("ZLINK_FAULT_PREFIX")).
		ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).
		Channel("echo").Server().HandleRequest("echo", echo)
	h, err := zlink.Start(ctx, o)
	cancel()
	if err != nil {
		childFail(err)
	}
	childServe(h.Mesh(autoMesh))
}

// startFaultAutoServer starts runFaultAutoServer in a child process and
// returns it with its RID.
func startFaultAutoServer(t *testing.T, redisAddr, prefix string) (*childNode, string) {
	t.Helper()
	return startRIDChild(t, "auto server "+prefix, "ZLINK_FAULT_AUTO_SERVER=1", "ZLINK_FAULT_REDIS="+redisAddr, "ZLINK_FAULT_PREFIX="+prefix)
}

// clientKnows says whether n shows rid Ready.
func clientKnows(t *testing.T, n *routemesh.Node, rid string) bool {
	t.Helper()
	p, ok := status(t, n).Peer(rid)
	return ok && p.State == routemesh.PeerReady
}
