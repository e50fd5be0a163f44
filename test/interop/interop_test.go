// Package interop tests ZLink against peers that are not ZLink: libzmq
// sockets (Debian's python3-zmq, libzmq 4.3) driven by peer.py, a ZLink
// peer written from docs/wire-protocol.md alone. The Python runs with
// /usr/bin/python3 (scripts/ensure-deps.sh installs python3-zmq and
// python3-msgpack); when they are missing the tests fail and say so.
package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*routerQReader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown.func1"),
		goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init.0"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

// python is the interpreter with Debian's python3-zmq and python3-msgpack.
const python = "/usr/bin/python3"

var (
	depsOnce sync.Once
	depsErr  string
)

// needPython fails the test, saying what to do, when the Python peer's
// dependencies are missing: these tests never skip silently.
func needPython(t *testing.T) {
	t.Helper()
	depsOnce.Do(func() {
		out, err := exec.Command(python, "-c", "import zmq, msgpack; print(zmq.zmq_version())").CombinedOutput()
		if err != nil {
			depsErr = strings.TrimSpace(string(out)) + " (" + err.Error() + ")"
		}
	})
	if depsErr != "" {
		t.Fatalf("%s cannot import zmq and msgpack: %s\nrun scripts/ensure-deps.sh as root "+
			"(make test does; it installs Debian's python3-zmq and python3-msgpack with apt-get)", python, depsErr)
	}
}

// peerScript is peer.py next to this file.
func peerScript(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "peer.py")
}

// peerProc is one running peer.py scenario.
type peerProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string
	more chan struct{} // closed and replaced at each new line
	done chan struct{} // closed when the process exited
	err  error
}

// startPeer runs scenario with args; the process is killed at cleanup.
func startPeer(t *testing.T, scenario string, args map[string]any) *peerProc {
	t.Helper()
	needPython(t)
	js, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, python, "-B", peerScript(t), scenario, string(js)) // -B: no __pycache__ in the tree
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", python, err)
	}
	p := &peerProc{t: t, cmd: cmd, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
		}
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		if stderr.Len() > 0 {
			p.out = append(p.out, "stderr: "+stderr.String())
		}
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
		for _, l := range p.lines() {
			t.Logf("peer.py %s: %s", scenario, l)
		}
	})
	return p
}

func (p *peerProc) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.out...)
}

// waitLine waits for a line starting with prefix and returns it.
func (p *peerProc) waitLine(prefix string, d time.Duration) string {
	p.t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for _, l := range p.out {
			if strings.HasPrefix(l, prefix) {
				p.mu.Unlock()
				return l
			}
		}
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-p.done:
			for _, l := range p.lines() {
				if strings.HasPrefix(l, prefix) {
					return l
				}
			}
			p.t.Fatalf("peer.py exited (%v) without a line %q:\n%s", p.err, prefix, strings.Join(p.lines(), "\n"))
		case <-deadline.C:
			p.t.Fatalf("no line %q from peer.py within %v:\n%s", prefix, d, strings.Join(p.lines(), "\n"))
		}
	}
}

// wait waits for the process to exit successfully and returns its lines.
func (p *peerProc) wait(d time.Duration) []string {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("peer.py still running after %v:\n%s", d, strings.Join(p.lines(), "\n"))
	}
	lines := p.lines()
	if p.err != nil {
		p.t.Fatalf("peer.py failed (%v):\n%s", p.err, strings.Join(lines, "\n"))
	}
	return lines
}

// expectLines fails unless every want is the start of one of lines.
func expectLines(t *testing.T, lines []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, w)
		}
		if !found {
			t.Errorf("no line %q in:\n%s", w, strings.Join(lines, "\n"))
		}
	}
}

func testLogger(t *testing.T) zerolog.Logger {
	if os.Getenv("ZLINK_TEST_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}

// nodeSecret is the shared secret of the nodes started with trust.
const nodeSecret = "interop-secret"

// startNode starts node "node" of mesh "interop": channel "echo" (Server,
// packet "echo" answers "echo:" + payload) and the node-direct packet
// "whoami" (answers "node"). With secret its trust profile is "shared".
func startNode(t *testing.T, secret string, more ...func(*routemesh.MeshBuilder)) *routemesh.Node {
	t.Helper()
	o := zlink.NewOptions()
	o.SetLogger(testLogger(t))
	mb := o.AddRouteMesh("interop").SetRoutingID("node").
		HandleDirectRequest("whoami", func(*routemesh.Context, []byte) ([]byte, error) { return []byte("node"), nil })
	mb.Channel("echo").Server().HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) {
		return append([]byte("echo:"), p...), nil
	})
	if secret != "" {
		mb.SetTrust(routemesh.TrustConfig{Secret: []byte(secret)})
	}
	for _, f := range more {
		f(mb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h.Mesh("interop")
}

func status(t *testing.T, n *routemesh.Node) routemesh.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A libzmq DEALER completes the ZMTP handshake with the node's guarded
// listener (the staged greeting), then the ZLink handshake with trust
// profile none and with a shared secret, a channel request, 1,000
// pipelined requests matched by correlation and node-direct calls.
func TestInterop_DealerDialsNode(t *testing.T) {
	for _, tc := range []struct{ name, secret, rid string }{
		{"trust none", "", "py"},
		{"shared secret", nodeSecret, "py"},
		{"shared secret, peer arbiter", nodeSecret, "a-py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, tc.secret)
			p := startPeer(t, "handshake", map[string]any{"endpoint": n.Endpoint(), "secret": tc.secret,
				"rid": tc.rid, "zmtp_id": "py-dealer"})
			lines := p.wait(time.Minute)
			expectLines(t, lines, "ok handshake", "ok channel request", "ok 1000 pipelined requests",
				"ok node direct", "ok unknown packet")
		})
	}
}

// A libzmq ROUTER that dials the node addresses it by the routing id of
// its READY ("router/" + RID).
func TestInterop_RouterDialsNode(t *testing.T) {
	n := startNode(t, nodeSecret)
	p := startPeer(t, "handshake", map[string]any{"endpoint": n.Endpoint(), "secret": nodeSecret,
		"router": true, "node_zmtp_id": "router/node"})
	expectLines(t, p.wait(time.Minute), "ok handshake", "ok 1000 pipelined requests", "ok node direct")
}

// The node dials a libzmq ROUTER (the Python side listens, answers the
// Hello and is called node direct).
func TestInterop_NodeDialsRouter(t *testing.T) {
	needPython(t)
	p := startPeer(t, "listen", map[string]any{"secret": nodeSecret, "rid": "pyl"})
	ep := strings.TrimPrefix(p.waitLine("endpoint ", 10*time.Second), "endpoint ")
	n := startNode(t, nodeSecret, func(b *routemesh.MeshBuilder) { b.AddPeer(ep, "pyl") })
	p.waitLine("ready", 10*time.Second)
	waitFor(t, "pyl ready", 10*time.Second, func() bool {
		ps, ok := status(t, n).Peer("pyl")
		return ok && ps.State == routemesh.PeerReady
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := n.CallNode(ctx, "pyl", "echo", []byte("x"))
	if err != nil || string(out) != "py:x" {
		t.Fatalf("node → libzmq ROUTER: %q %v", out, err)
	}
}

// Ready and idle for 10 s with libzmq's ZMTP heartbeats on (a PING every
// 100 ms, the connection dropped after 450 ms without traffic): the peer
// answers the node's heartbeats, the node answers the PINGs with PONGs,
// and the pipe is still ready and answers after.
func TestInterop_IdleWithHeartbeats(t *testing.T) {
	n := startNode(t, "")
	p := startPeer(t, "idle", map[string]any{"endpoint": n.Endpoint(), "idle": 10})
	p.waitLine("ready", 10*time.Second)
	waitFor(t, "py ready", 5*time.Second, func() bool {
		ps, ok := status(t, n).Peer("py")
		return ok && ps.State == routemesh.PeerReady
	})
	expectLines(t, p.wait(time.Minute), "ok still ready after 10s idle")
}

// Every documented protocol violation gets its documented answer.
func TestInterop_Violations(t *testing.T) {
	n := startNode(t, nodeSecret)
	p := startPeer(t, "violations", map[string]any{"endpoint": n.Endpoint(), "secret": nodeSecret,
		"recv_limit": recvLimitOf(t, n)})
	expectLines(t, p.wait(2*time.Minute),
		"ok version: Reject(version)", "ok frame type: Reject(version)", "ok identity protocol: Reject(version)",
		"ok wrong mesh: Reject(wrong_mesh)", "ok expectRID: Reject(wrong_rid)",
		"ok generation 0: Reject(protocol)", "ok revision 0: Reject(protocol)",
		"ok security identity = RID: Reject(protocol)", "ok identity field count: Reject(protocol)",
		"ok Hello field count: Reject(protocol)", "ok short nonce: Reject(protocol)",
		"ok trailing bytes: Reject(protocol)", "ok first frame not a Hello: Reject(protocol)",
		"ok not msgpack: Reject(protocol)", "ok rid collision: Reject(rid_collision)",
		"ok no batch-v1: Reject(capability)", "ok wrong secret: Reject(auth)", "ok other security identity: Reject(auth)",
		"ok unknown envelope kind: closed", "ok envelope of 15 fields: closed", "ok frame over RecvLimit: closed",
		"ok a frame of exactly RecvLimit (67174400 bytes) is read")
}

// recvLimitOf is the receive limit node n states (docs/wire-protocol.md
// §6): its byte budget (64 MiB by default) and 64 KiB of framing.
func recvLimitOf(t *testing.T, n *routemesh.Node) uint64 {
	t.Helper()
	if got := routemesh.DefaultSocketConfig().MailboxByteBudget; got != 64<<20 {
		t.Fatalf("default MailboxByteBudget %d; docs/wire-protocol.md §6 says 64 MiB", got)
	}
	return 64<<20 + 64<<10
}

// A second connection with a live connection's routing id is refused
// with a ZMTP ERROR; peers without a routing id get generated ones.
func TestInterop_RoutingIDs(t *testing.T) {
	n := startNode(t, "")
	p := startPeer(t, "duplicate", map[string]any{"endpoint": n.Endpoint()})
	expectLines(t, p.wait(time.Minute), "ok a second connection with a live routing id", "ok the first connection")
	p = startPeer(t, "anonymous", map[string]any{"endpoint": n.Endpoint()})
	expectLines(t, p.wait(time.Minute), "ok two peers without a routing id")
	p = startPeer(t, "reconnect", map[string]any{"endpoint": n.Endpoint(), "rounds": 10})
	expectLines(t, p.wait(time.Minute), "ok the same routing id dialed again at once")
}
