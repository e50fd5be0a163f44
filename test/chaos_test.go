package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/faults"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// chaosPair is a server node S (a Channel Server "echo" and a Node-direct
// handler) and a client node C, in automatic topology over the in-memory
// Location Store, so every actor kind of a MeshNode exists on S:
// host, mesh actor, peer, direct owner, channels supervisor, channel
// owner, discovery.
func chaosPair(t *testing.T) (hs *zlink.Host, s, c *routemesh.Node) {
	t.Helper()
	store := location.NewMemory()
	disc := routemesh.DiscoveryConfig{Poll: 100 * time.Millisecond, DescriptorTTL: 2 * time.Second}
	os := zlink.NewOptions().SetLocationStore(store)
	mb := os.AddRouteMesh("chaos").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix("s").
		ConfigureLiveness(fastLiveness).ConfigureDiscovery(disc).HandleDirectRequest("echo", echo)
	mb.Channel("echo").Server().HandleRequest("echo", echo)
	hs = startHost(t, os)
	oc := zlink.NewOptions().SetLocationStore(store)
	oc.AddRouteMesh("chaos").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix("c").
		ConfigureLiveness(fastLiveness).ConfigureDiscovery(disc).Channel("echo").Client()
	hc := startHost(t, oc)
	s, c = hs.Mesh("chaos"), hc.Mesh("chaos")
	waitPeerState(t, c, s.RID(), routemesh.PeerReady)
	waitPeerState(t, s, c.RID(), routemesh.PeerReady)
	return hs, s, c
}

// chaosLoad calls S from C in a loop, over the channel and Node direct,
// and records every terminal result.
type chaosLoad struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	results map[string]int // "ok" or the error
	bad     []error
	marked  atomic.Bool
	kinds   sync.Map // kind → true once it succeeded after the mark
}

var typedResults = []error{zlink.ErrPeerLost, zlink.ErrBusy, zlink.ErrNoTarget, zlink.ErrHandler}

func startChaosLoad(t *testing.T, c *routemesh.Node, sRID string) *chaosLoad {
	l := &chaosLoad{stop: make(chan struct{}), results: map[string]int{}}
	run := func(kind string, call func(ctx context.Context) ([]byte, error)) {
		defer l.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			want := []byte(fmt.Sprintf("echo:%s-%d", kind, i))
			out, err := call(ctx)
			cancel()
			l.record(kind, err, err == nil && !bytes.Equal(out, want))
		}
	}
	l.wg.Add(2)
	go run("channel", func(ctx context.Context) ([]byte, error) {
		return c.Call(ctx, "echo", "echo", []byte(fmt.Sprintf("channel-%d", l.next("channel"))))
	})
	go run("direct", func(ctx context.Context) ([]byte, error) {
		return c.CallNode(ctx, sRID, "echo", []byte(fmt.Sprintf("direct-%d", l.next("direct"))))
	})
	t.Cleanup(l.end)
	return l
}

// next numbers the calls of one kind (one goroutine per kind).
func (l *chaosLoad) next(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results["n:"+kind]
}

func (l *chaosLoad) record(kind string, err error, wrong bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results["n:"+kind]++
	switch {
	case wrong:
		l.bad = append(l.bad, fmt.Errorf("%s: a reply that is not the echo of its request", kind))
	case err == nil:
		l.results["ok"]++
		if l.marked.Load() {
			l.kinds.Store(kind, true)
		}
	default:
		typed := false
		for _, want := range typedResults {
			if errors.Is(err, want) {
				typed = true
			}
		}
		if !typed {
			l.bad = append(l.bad, fmt.Errorf("%s: %w", kind, err))
		}
		l.results[errKind(err)]++
	}
}

func errKind(err error) string {
	for _, want := range typedResults {
		if errors.Is(err, want) {
			return want.Error()
		}
	}
	return err.Error()
}

// mark starts counting successes that happen after the fault.
func (l *chaosLoad) mark() { l.marked.Store(true) }

func (l *chaosLoad) recovered() bool {
	_, ch := l.kinds.Load("channel")
	_, di := l.kinds.Load("direct")
	return ch && di
}

func (l *chaosLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// check ends the load and fails on any result that is not a reply or a
// typed error (a timeout counts as a hang here).
func (l *chaosLoad) check(t *testing.T) {
	t.Helper()
	l.end()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		t.Fatalf("%d calls ended wrongly, first: %v (results %v)", len(l.bad), l.bad[0], l.results)
	}
	t.Logf("results: %v", l.results)
}

func treeNode(h *zlink.Host, path string) (supervisor.Node, bool) {
	var find func(n supervisor.Node) (supervisor.Node, bool)
	find = func(n supervisor.Node) (supervisor.Node, bool) {
		if n.Path == path {
			return n, true
		}
		for _, c := range n.Children {
			if f, ok := find(c); ok {
				return f, true
			}
		}
		return supervisor.Node{}, false
	}
	return find(h.Tree())
}

// pathWithPrefix finds the first tree path starting with prefix.
func pathWithPrefix(h *zlink.Host, prefix string) string {
	var found string
	var walk func(n supervisor.Node)
	walk = func(n supervisor.Node) {
		if found == "" && strings.HasPrefix(n.Path, prefix) {
			found = n.Path
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(h.Tree())
	return found
}

// TestChaos_EveryActorKindComesBackWhole injects a panic into each actor
// kind of a serving MeshNode while calls run, and checks that the tree
// shows the restart, calls succeed again within a bound, and every call
// ended with a reply or a typed error.
func TestChaos_EveryActorKindComesBackWhole(t *testing.T) {
	const mesh = "/host/mesh:chaos"
	for _, tc := range []struct {
		kind string
		path func(h *zlink.Host, s, c *routemesh.Node) string
		// restarted reports whether the fault was recovered from as this
		// kind recovers: a restart in place, or (peer) a new connection.
		restarted func(t *testing.T, h *zlink.Host, s *routemesh.Node, path string) bool
	}{
		{kind: "host", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return "/host" }},
		{kind: "meshnode", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return mesh }},
		{kind: "direct", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return mesh + "/direct" }},
		{kind: "channels", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return mesh + "/channels" }},
		{kind: "channel", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string {
			return mesh + "/channels/channel:echo"
		}},
		{kind: "discovery", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return mesh + "/discovery" }},
		{kind: "listener", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return mesh + "/listener" }},
		{kind: "lease", path: func(*zlink.Host, *routemesh.Node, *routemesh.Node) string { return mesh + "/lease" }},
		{
			kind: "writer",
			path: func(h *zlink.Host, _, c *routemesh.Node) string {
				return pathWithPrefix(h, mesh+"/peer:"+c.RID()+"#") + "/writer"
			},
			// A writer restart drops its connection, like a peer restart.
			restarted: func(t *testing.T, h *zlink.Host, s *routemesh.Node, path string) bool {
				st := status(t, s)
				p := pathWithPrefix(h, mesh+"/peer:")
				return st.Counters["peers_lost"] >= 1 && p != "" && p+"/writer" != path
			},
		},
		{
			kind: "peer",
			path: func(h *zlink.Host, _, c *routemesh.Node) string {
				return pathWithPrefix(h, mesh+"/peer:"+c.RID()+"#")
			},
			// A peer restart ends its connection: the old peer actor is
			// gone with it, and a new connection (and peer actor) follows.
			restarted: func(t *testing.T, h *zlink.Host, s *routemesh.Node, path string) bool {
				st := status(t, s)
				p := pathWithPrefix(h, mesh+"/peer:")
				return st.Counters["peers_lost"] >= 1 && p != "" && p != path
			},
		},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			hs, s, c := chaosPair(t)
			path := tc.path(hs, s, c)
			if _, ok := treeNode(hs, path); !ok || path == "" {
				t.Fatalf("no %s actor at %q in the tree:\n%v", tc.kind, path, hs.Tree())
			}
			load := startChaosLoad(t, c, s.RID())
			waitFor(t, "calls flowing", 10*time.Second, func() bool {
				load.mu.Lock()
				defer load.mu.Unlock()
				return load.results["ok"] >= 20
			})
			load.mark()
			if err := faults.InjectPanic(hs, path, "chaos"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the restart in the tree", 10*time.Second, func() bool {
				if tc.restarted != nil {
					return tc.restarted(t, hs, s, path)
				}
				n, ok := treeNode(hs, path)
				return ok && n.Restarts >= 1 && n.State == supervisor.Running &&
					n.LastFailure != nil && n.LastFailure.Reason == "chaos"
			})
			waitFor(t, "calls of both kinds succeeding again", 10*time.Second, load.recovered)
			load.check(t)
			if st := s.State(); st != routemesh.NodeReady {
				t.Fatalf("server state after recovery = %v", st)
			}
		})
	}
}

// TestChaos_PastTheIntensityTheNodeFailsVisibly: a mesh actor that keeps
// failing is not restarted forever; the node ends Failed, the tree and
// status say so, and every call ends at once with ErrNodeFailed.
func TestChaos_PastTheIntensityTheNodeFailsVisibly(t *testing.T) {
	hs, s, c := chaosPair(t)
	const path = "/host/mesh:chaos"
	// The default intensity is 3 restarts in 10 s: the 4th failure gives up.
	for i := 0; i < 4; i++ {
		waitFor(t, "the mesh actor running", 10*time.Second, func() bool {
			n, ok := treeNode(hs, path)
			return ok && (n.State == supervisor.Running || n.State == supervisor.Failed)
		})
		if err := faults.InjectPanic(hs, path, fmt.Sprintf("chaos %d", i)); err != nil {
			t.Fatalf("inject %d: %v", i, err)
		}
		want := i + 1
		waitFor(t, "the failure recorded", 10*time.Second, func() bool {
			n, _ := treeNode(hs, path)
			return n.LastFailure != nil && n.LastFailure.Reason == fmt.Sprintf("chaos %d", want-1)
		})
	}
	waitFor(t, "the node failed", 10*time.Second, func() bool { return s.State() == routemesh.NodeFailed })
	n, ok := treeNode(hs, path)
	if !ok || n.State != supervisor.Failed || n.LastFailure == nil {
		t.Fatalf("tree does not show the failure: %+v", n)
	}
	st := status(t, s)
	if st.State != routemesh.NodeFailed || st.Failure == "" {
		t.Fatalf("status = %v %q", st.State, st.Failure)
	}
	if h := hs.Health(ctxT(t, 5*time.Second), zlink.HealthConfig{}); h.Live || h.Ready || len(h.Reasons) == 0 {
		t.Fatalf("health of a host with a failed node = %+v", h)
	}
	start := time.Now()
	if _, err := s.CallNode(ctxT(t, 5*time.Second), s.RID(), "echo", nil); !errors.Is(err, routemesh.ErrNodeFailed) {
		t.Fatalf("call on a failed node = %v, want ErrNodeFailed", err)
	}
	if _, err := s.Call(ctxT(t, 5*time.Second), "echo", "echo", nil); !errors.Is(err, routemesh.ErrNodeFailed) {
		t.Fatalf("channel call on a failed node = %v, want ErrNodeFailed", err)
	}
	// Well under the calls' 5 s deadlines, with slack for a loaded machine.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("calls on a failed node took %v; they must end at once", d)
	}
	// Its peers see it gone.
	waitFor(t, "the client losing the failed node", 10*time.Second, func() bool {
		_, err := c.CallNode(ctxT(t, time.Second), s.RID(), "echo", nil)
		return errors.Is(err, zlink.ErrNoTarget)
	})
}

// TestChaos_PastTheIntensityAChildEscalatesToItsParent: a channel owner
// that keeps failing is given up by the channels supervisor, whose own
// failure makes the mesh actor restart it — a rebuild of every owner — and
// the node serves again.
func TestChaos_PastTheIntensityAChildEscalatesToItsParent(t *testing.T) {
	hs, s, c := chaosPair(t)
	const owner = "/host/mesh:chaos/channels/channel:echo"
	const sup = "/host/mesh:chaos/channels"
	for i := 0; i < 4; i++ {
		waitFor(t, "the owner running", 10*time.Second, func() bool {
			n, ok := treeNode(hs, owner)
			return ok && n.State == supervisor.Running
		})
		if err := faults.InjectPanic(hs, owner, fmt.Sprintf("chaos %d", i)); err != nil {
			t.Fatalf("inject %d: %v", i, err)
		}
		if i < 3 {
			want := i + 1
			waitFor(t, "the owner restarted", 10*time.Second, func() bool {
				n, ok := treeNode(hs, owner)
				return ok && n.Restarts == want
			})
		}
	}
	waitFor(t, "the channels supervisor restarted by the mesh actor", 10*time.Second, func() bool {
		n, ok := treeNode(hs, sup)
		return ok && n.Restarts >= 1 && n.State == supervisor.Running
	})
	waitFor(t, "a fresh owner", 10*time.Second, func() bool {
		n, ok := treeNode(hs, owner)
		return ok && n.Restarts == 0 && n.State == supervisor.Running
	})
	if st := s.State(); st != routemesh.NodeReady {
		t.Fatalf("server state = %v", st)
	}
	waitFor(t, "channel calls served again", 10*time.Second, func() bool {
		_, err := c.Call(ctxT(t, time.Second), "echo", "echo", nil)
		return err == nil
	})
}
