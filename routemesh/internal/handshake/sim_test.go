package handshake

import (
	"fmt"
	"slices"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

// An in-memory network of nodes that run handshakes with these machines.
// Frames of one pipe in one direction arrive in order (a ZeroMQ pipe is
// ordered); frames of different pipes may arrive in any order. The test
// decides which frame arrives next, which is dropped, and when time passes.

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const timeout = 5 * time.Second

type simNode struct {
	id     admission.Identity
	secret string
	adm    *admission.Machine
	hs     map[string]*Machine // pipe → machine
	ready  []string            // pipes that became ready, in order
	closed map[string]Output   // pipes closed in the handshake → why
	// replaced are ready pipes closed by a Replace.
	replaced []string
}

type simMsg struct {
	pipe      string
	from, to  string
	frame     Frame
	reason    Reason
	expectRID string
}

// tb is what the simulation needs from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

type sim struct {
	t       tb
	now     time.Time
	nodes   map[string]*simNode
	queue   []simMsg
	dropped []simMsg
}

func newSim(t tb) *sim { return &sim{t: t, now: t0, nodes: map[string]*simNode{}} }

func ident(rid string, gen uint64) admission.Identity {
	return admission.Identity{Mesh: "game", RID: rid, Generation: gen, Revision: 1,
		ObjectRole: admission.RoleServer, ServerChannels: 1, SecurityIdentity: "shared:fp",
		Protocol: 1, Capabilities: []string{"batch"}}
}

// add starts a node with the given identity (replacing one of the same RID,
// as a restart does).
func (s *sim) add(id admission.Identity) *simNode {
	n := &simNode{id: id, secret: "s", adm: admission.New(id, []string{"batch"}), hs: map[string]*Machine{}, closed: map[string]Output{}}
	s.nodes[id.RID] = n
	return n
}

// dial opens pipe id from one node to another and connects it at once.
func (s *sim) dial(from, to, id string) {
	s.dialExpect(from, to, id, admission.Intent{Endpoint: "tcp://" + to, ExpectRID: to, ConfigGeneration: 1})
}

func (s *sim) dialExpect(from, to, id string, in admission.Intent) {
	n := s.nodes[from]
	m := New(Config{Timeout: timeout}, n.adm, admission.Pipe{ID: id, Outbound: true, Intent: &in}, s.now)
	n.hs[id] = m
	s.apply(n, id, to, m.Step(s.now, Event{Kind: Dialed}), in.ExpectRID)
}

// apply carries out an Output the way the mesh actor does.
func (s *sim) apply(n *simNode, pipe, peer string, out Output, expectRID string) {
	if out.Send != 0 {
		s.queue = append(s.queue, simMsg{pipe: pipe, from: n.id.RID, to: peer, frame: out.Send, reason: out.Reason, expectRID: expectRID})
	}
	if out.Replace != "" {
		n.replaced = append(n.replaced, out.Replace)
		n.adm.PipeClosed(out.Replace)
	}
	if out.Ready {
		n.ready = append(n.ready, pipe)
	}
	if out.Close {
		n.closed[pipe] = out
		n.adm.PipeClosed(pipe)
	}
}

// deliver hands the i-th in-flight frame to its receiver.
func (s *sim) deliver(i int) {
	msg := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	n, from := s.nodes[msg.to], s.nodes[msg.from]
	m := n.hs[msg.pipe]
	if m == nil {
		if msg.frame != FrameHello {
			return // the pipe never existed here
		}
		m = New(Config{Timeout: timeout}, n.adm, admission.Pipe{ID: msg.pipe}, s.now)
		n.hs[msg.pipe] = m
	}
	ev := Event{}
	switch msg.frame {
	case FrameHello:
		ev = Event{Kind: HelloReceived, Remote: from.id, ExpectRID: msg.expectRID}
	case FrameWelcome:
		ev = Event{Kind: WelcomeReceived, Remote: from.id, ProofOK: from.secret == n.secret}
	case FrameAuth:
		ev = Event{Kind: AuthReceived, ProofOK: from.secret == n.secret}
	case FrameBatch:
		ev = Event{Kind: BatchReceived}
	case FrameReject:
		ev = Event{Kind: RejectReceived, Reason: msg.reason}
	}
	s.apply(n, msg.pipe, msg.from, m.Step(s.now, ev), "")
}

// deliverable returns the indexes of the in-flight frames that may arrive
// next: the oldest of each pipe and direction.
func (s *sim) deliverable() []int {
	var idx []int
	seen := map[[3]string]bool{}
	for i, m := range s.queue {
		k := [3]string{m.pipe, m.from, m.to}
		if !seen[k] {
			seen[k] = true
			idx = append(idx, i)
		}
	}
	return idx
}

// run delivers frames in order until none is left.
func (s *sim) run() {
	for len(s.queue) > 0 {
		s.deliver(0)
	}
}

// drop loses the next in-flight frame of this type.
func (s *sim) drop(f Frame) {
	for i, m := range s.queue {
		if m.frame == f {
			s.dropped = append(s.dropped, m)
			s.queue = slices.Delete(s.queue, i, i+1)
			return
		}
	}
	s.t.Fatalf("no %s in flight to drop", f)
}

// advance moves the clock and ticks every machine that is still running.
func (s *sim) advance(d time.Duration) {
	s.now = s.now.Add(d)
	for _, n := range s.nodes {
		for pipe, m := range n.hs {
			s.apply(n, pipe, "", m.Step(s.now, Event{Kind: Tick}), "")
		}
	}
}

// readyPipes returns the pipes a node declared ready that are still its
// current connection.
func (s *sim) readyPipes(rid string) []string {
	n := s.nodes[rid]
	var out []string
	for _, p := range n.ready {
		if n.adm.IsCurrent(p) {
			out = append(out, p)
		}
	}
	return out
}

// checkOneConnection asserts the pair a–b ended with exactly one ready
// connection, the same pipe on both sides, and that no ready pipe was torn
// down (no Replace, every closed pipe was closed before ready).
func (s *sim) checkOneConnection(a, b string) string {
	s.t.Helper()
	ra, rb := s.readyPipes(a), s.readyPipes(b)
	if len(ra) != 1 || len(rb) != 1 || ra[0] != rb[0] {
		s.t.Fatalf("ready pipes: %s %v, %s %v (closed %s %v, %s %v)", a, ra, b, rb,
			a, s.nodes[a].closed, b, s.nodes[b].closed)
	}
	s.checkNoTearDown()
	return ra[0]
}

func (s *sim) checkNoTearDown() {
	s.t.Helper()
	for rid, n := range s.nodes {
		if len(n.replaced) > 0 {
			s.t.Fatalf("%s replaced ready pipes %v", rid, n.replaced)
		}
		for _, p := range n.ready {
			if _, ok := n.closed[p]; ok {
				s.t.Fatalf("%s: ready pipe %s was closed by the handshake", rid, p)
			}
		}
		if len(n.ready) > 1 {
			s.t.Fatalf("%s declared %d pipes ready: %v", rid, len(n.ready), n.ready)
		}
	}
}

func (s *sim) closedWith(rid, pipe string) Output {
	s.t.Helper()
	out, ok := s.nodes[rid].closed[pipe]
	if !ok {
		s.t.Fatalf("%s: pipe %s not closed (state %v)", rid, pipe, s.nodes[rid].hs[pipe].State())
	}
	return out
}

func (o Output) String() string {
	return fmt.Sprintf("{send %v reason %v ready %v close %v byPeer %v}", o.Send, o.Reason, o.Ready, o.Close, o.ByPeer)
}
