package benchrun

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

func init() {
	register(Bench{
		Name: "spots-move",
		About: "Spots of a persistent kind moving between Object Servers (loopback ZeroMQ, in-memory Location Store): moves/s and total time " +
			"of Node.Drain handing off N active Spots, beside a drain that only releases; caller p50/p99 and errors during spot.Relocate " +
			"and a drain vs the steady state of the same run",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			return runSpotsMoveBench(ctx, w, spotsMovePlanFor(quick))
		},
	})
}

// The moves bench's persistent kind: "inc" adds one to the Spot's counter
// and returns it (8 bytes, big endian). Its state is saved only when it
// moves or deactivates (Persistence without Every or Interval).
const (
	moveKind   = "moving"
	movePacket = "inc"
)

// moveState is the persistent Spot's state.
type moveState struct {
	N int64 `msgpack:"n"`
}

func spotsMoveKind() *spot.Kind[moveState] {
	return spot.NewKind(moveKind, func(string) *moveState { return &moveState{} }).
		OnRaw(movePacket, func(_ *spot.Context, s *moveState, _ []byte) ([]byte, error) {
			s.N++
			return binary.BigEndian.AppendUint64(nil, uint64(s.N)), nil
		}).
		SetIdleTimeout(spotsIdle).
		Persist(spot.Persistence{Version: 1})
}

// moveDrainTimeout replaces the node's 10 s drain timeout: the bench
// times the drain, it does not cut it short.
const moveDrainTimeout = 5 * time.Minute

// moveCallTimeout bounds one caller call; a call that takes longer counts
// as a caller error.
const moveCallTimeout = 5 * time.Second

// spotsMovePlan is the size of each part of the bench.
type spotsMovePlan struct {
	drainSpots int           // active persistent Spots on the node that drains
	aloneSpots int           // Spots on a server that drains with nobody to take them
	actCallers int           // goroutines activating them
	callSpots  int           // Spots the callers call while they are relocated and drained
	callers    int           // calling goroutines (one call at a time each)
	steady     time.Duration // each steady window
	late       time.Duration // when > 0: a steady window this long after the relocation
}

// moveForwardWait is how long an old owner forwards calls for a Spot that
// moved (spot's moveWait: 2 × StoreTimeout + 1 s with the defaults).
const moveForwardWait = 5 * time.Second

func spotsMovePlanFor(quick bool) spotsMovePlan {
	if quick {
		return spotsMovePlan{drainSpots: 300, aloneSpots: 4, actCallers: 8, callSpots: 100, callers: 8, steady: 300 * time.Millisecond}
	}
	return spotsMovePlan{drainSpots: 10_000, aloneSpots: 8, actCallers: 16, callSpots: 2000, callers: 16, steady: 2 * time.Second,
		late: moveForwardWait + time.Second}
}

func runSpotsMoveBench(ctx context.Context, w io.Writer, plan spotsMovePlan) error {
	fmt.Fprintf(w, "setup: Object Servers in one process, loopback ZeroMQ, in-memory Location Store (automatic topology), spot.Config defaults "+
		"(lease 6s), kind %q persistent (msgpack counter, saved on a move), idle timeout 1h, GOMAXPROCS=%d\n", moveKind, runtime.GOMAXPROCS(0))
	if err := spotsMoveDrain(ctx, w, plan); err != nil {
		return err
	}
	return spotsMoveCallers(ctx, w, plan)
}

// moveCall calls the persistent Spot id once from n and returns its counter.
func moveCall(ctx context.Context, n *routemesh.Node, id string) (int64, spot.Result, error) {
	out, res, err := spot.CallRaw(ctx, n, moveKind, id, movePacket, nil)
	if err != nil {
		return 0, res, err
	}
	if len(out) != 8 {
		return 0, res, fmt.Errorf("%w: %d-byte reply", errEchoMismatch, len(out))
	}
	return int64(binary.BigEndian.Uint64(out)), res, nil
}

// startMoveNode starts one node of the bench on c's store and adds it to c.
// Object Servers host the bench kinds; an Object Client only calls.
func (c *spotsCluster) startMoveNode(ctx context.Context, prefix string, role routemesh.ObjectRole, logs *moveLogs) (*routemesh.Node, error) {
	o := zlink.NewOptions().SetLocationStore(c.store).SetLogger(logs.logger(prefix))
	b := o.AddRouteMesh(spotsMesh).SetRoutingIDPrefix(prefix).SetObjectRole(role).
		ConfigureLiveness(spotsSteady.liveness).ConfigureDiscovery(spotsSteady.discovery).
		SetTimeouts(moveDrainTimeout, 0)
	if role == routemesh.ObjectServer {
		spot.EnableWith(b, spot.Config{}, spotsBenchKind(), spotsMoveKind())
	} else {
		spot.EnableWith(b, spot.Config{})
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	h, err := zlink.Start(sctx, o)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("spots-move: start %s: %w", prefix, err)
	}
	c.hosts = append(c.hosts, h)
	n := h.Mesh(spotsMesh)
	c.nodes = append(c.nodes, n)
	return n, c.waitJoined(ctx)
}

// waitJoined waits until every node of c sees every other as a ready peer
// and can serve Spot calls.
func (c *spotsCluster) waitJoined(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, n := range c.nodes {
		if err := n.WaitPeers(wctx, len(c.nodes)-1); err != nil {
			return fmt.Errorf("spots-move: %s peers: %w", n.RID(), err)
		}
		for _, p := range c.nodes {
			// A ready connection (the peer may be draining).
			for ready, _ := n.PeerReady(p.RID()); !ready; ready, _ = n.PeerReady(p.RID()) {
				if wctx.Err() != nil {
					return fmt.Errorf("spots-move: %s has no ready connection to %s: %w", n.RID(), p.RID(), wctx.Err())
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if err := spot.WaitReady(wctx, n); err != nil {
			return fmt.Errorf("spots-move: %s: %w", n.RID(), err)
		}
	}
	return nil
}

func newMoveCluster() *spotsCluster { return &spotsCluster{store: location.NewMemory()} }

// moveLogs collects the nodes' warnings and errors (the runtime logs a
// move that failed, an adoption that did not happen, a refused write).
type moveLogs struct {
	mu    sync.Mutex
	count int
	msgs  map[string]int // node + level + message → count
}

func newMoveLogs() *moveLogs { return &moveLogs{msgs: map[string]int{}} }

func (l *moveLogs) logger(node string) zerolog.Logger {
	return zerolog.New(l).Level(zerolog.WarnLevel).With().Str("node", node).Logger()
}

// Write takes one zerolog event (one JSON object per call).
func (l *moveLogs) Write(p []byte) (int, error) {
	var ev struct {
		Node    string `json:"node"`
		Level   string `json:"level"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	key := string(bytes.TrimSpace(p))
	if err := json.Unmarshal(p, &ev); err == nil {
		key = fmt.Sprintf("%s %s %q", ev.Node, ev.Level, ev.Message)
		if ev.Error != "" {
			key += fmt.Sprintf(" (error %q)", moveErrClass(ev.Error))
		}
	}
	l.mu.Lock()
	l.count++
	l.msgs[key]++
	l.mu.Unlock()
	return len(p), nil
}

// line says how many warnings came and the most frequent kinds of them.
func (l *moveLogs) line() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return "0"
	}
	keys := make([]string, 0, len(l.msgs))
	for k := range l.msgs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return l.msgs[keys[i]] > l.msgs[keys[j]] || l.msgs[keys[i]] == l.msgs[keys[j]] && keys[i] < keys[j]
	})
	parts := make([]string, 0, 4)
	for _, k := range keys[:min(len(keys), 4)] {
		parts = append(parts, fmt.Sprintf("%d× %s", l.msgs[k], k))
	}
	return fmt.Sprintf("%d: %s", l.count, strings.Join(parts, "; "))
}

func (l *moveLogs) reset() {
	l.mu.Lock()
	l.count, l.msgs = 0, map[string]int{}
	l.mu.Unlock()
}

// moveErrClass bounds an error text's length.
func moveErrClass(s string) string {
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// moveErrs counts caller errors by text and keeps the first ones.
type moveErrs struct {
	mu    sync.Mutex
	count int
	byMsg map[string]int
	first []string
}

func (e *moveErrs) add(at time.Duration, id string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byMsg == nil {
		e.byMsg = map[string]int{}
	}
	e.count++
	msg := err.Error()
	e.byMsg[moveErrClass(strings.ReplaceAll(msg, id, "<id>"))]++
	if len(e.first) < 3 {
		e.first = append(e.first, fmt.Sprintf("%v %s: %v", at.Round(time.Millisecond), id, err))
	}
}

func (e *moveErrs) summary() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.count == 0 {
		return "none"
	}
	keys := make([]string, 0, len(e.byMsg))
	for k := range e.byMsg {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return e.byMsg[keys[i]] > e.byMsg[keys[j]] })
	parts := make([]string, 0, 4)
	for _, k := range keys[:min(len(keys), 4)] {
		parts = append(parts, fmt.Sprintf("%d× %s", e.byMsg[k], k))
	}
	return fmt.Sprintf("%s; first: %s", strings.Join(parts, "; "), strings.Join(e.first, " | "))
}
