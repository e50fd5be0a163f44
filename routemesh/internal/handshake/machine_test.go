package handshake

import (
	"errors"
	"testing"

	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

// Frames each side sends, in order, for one dial with no refusal.
func TestHandshake_OneDial(t *testing.T) {
	tests := []struct {
		name, dialer, listener string
	}{
		{"arbiter dials", "a", "b"},
		{"follower dials", "b", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t)
			s.add(ident("a", 1))
			s.add(ident("b", 2))
			s.dial(tt.dialer, tt.listener, "p")
			var sent []Frame
			for len(s.queue) > 0 {
				sent = append(sent, s.queue[0].frame)
				s.deliver(0)
			}
			want := []Frame{FrameHello, FrameWelcome, FrameAuth, FrameBatch}
			if tt.dialer == "a" {
				// The follower listener acknowledges the Auth; the arbiter
				// dialer answers with its ready.
				want = append(want, FrameBatch)
			}
			if !equalFrames(sent, want) {
				t.Fatalf("frames %v, want %v", sent, want)
			}
			if p := s.checkOneConnection("a", "b"); p != "p" {
				t.Fatalf("ready pipe %q", p)
			}
		})
	}
}

func equalFrames(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The follower never becomes ready before the arbiter: whichever frame is
// lost, the follower is ready only if the arbiter is, on the same pipe; a
// lost frame ends in a timeout on every side still in the handshake.
func TestHandshake_DroppedFrameTimesOut(t *testing.T) {
	tests := []struct {
		name         string
		dialer       string
		deliverFirst int // frames delivered before the drop
		// who is ready after the timeout
		readyA, readyB bool
	}{
		{"hello lost", "a", 0, false, false},
		{"welcome lost", "a", 1, false, false},
		{"auth lost", "a", 2, false, false},
		{"follower ack lost", "a", 3, false, false},
		{"arbiter ready lost (arbiter dialed)", "a", 4, true, false},
		{"arbiter ready lost (follower dialed)", "b", 3, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t)
			s.add(ident("a", 1))
			s.add(ident("b", 2))
			other := map[string]string{"a": "b", "b": "a"}[tt.dialer]
			s.dial(tt.dialer, other, "p")
			for range tt.deliverFirst {
				s.deliver(0)
			}
			s.drop(s.queue[0].frame)
			s.run()
			s.advance(timeout - 1)
			for _, rid := range []string{"a", "b"} {
				if _, ok := s.nodes[rid].closed["p"]; ok {
					t.Fatalf("%s closed before the deadline", rid)
				}
			}
			s.advance(1)
			for rid, wantReady := range map[string]bool{"a": tt.readyA, "b": tt.readyB} {
				n := s.nodes[rid]
				m := n.hs["p"]
				if m == nil {
					if wantReady {
						t.Fatalf("%s never saw the pipe", rid)
					}
					continue
				}
				if got := m.State() == Ready; got != wantReady {
					t.Fatalf("%s ready = %v, want %v (state %v)", rid, got, wantReady, m.State())
				}
				if !wantReady {
					if out := s.closedWith(rid, "p"); out.Reason != Timeout || out.Send != 0 {
						t.Fatalf("%s closed with %v, want a timeout", rid, out)
					}
				}
			}
			s.checkNoTearDown()
		})
	}
}

// A second pipe between nodes that already have a ready one is refused
// before ready, whoever dials it, and the ready one stays.
func TestHandshake_DuplicateDial(t *testing.T) {
	for _, second := range []string{"a", "b"} {
		for _, first := range []string{"a", "b"} {
			t.Run(first+" then "+second, func(t *testing.T) {
				s := newSim(t)
				s.add(ident("a", 1))
				s.add(ident("b", 2))
				other := map[string]string{"a": "b", "b": "a"}
				s.dial(first, other[first], "p1")
				s.run()
				s.dial(second, other[second], "p2")
				s.run()
				if p := s.checkOneConnection("a", "b"); p != "p1" {
					t.Fatalf("ready pipe %q, want p1", p)
				}
				// The arbiter refused p2; the follower learned it from the Reject.
				if out := s.closedWith("a", "p2"); out.Reason != Duplicate || out.ByPeer {
					t.Fatalf("arbiter closed p2 with %v", out)
				}
				if out := s.closedWith("b", "p2"); out.Reason != Duplicate || !out.ByPeer {
					t.Fatalf("follower closed p2 with %v", out)
				}
			})
		}
	}
}

// Both nodes dial at the same instant and every frame of one round crosses
// the other's in flight: one pipe becomes ready on both sides, the other is
// refused before either side declared it ready.
func TestHandshake_SimultaneousDial(t *testing.T) {
	orders := map[string]func(s *sim){
		"lockstep":       func(s *sim) { s.run() },
		"newest first":   func(s *sim) { runNewestFirst(s) },
		"ab to the end":  func(s *sim) { runPipeFirst(s, "ab") },
		"ba to the end":  func(s *sim) { runPipeFirst(s, "ba") },
		"frames crossed": func(s *sim) { runCrossed(s) },
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			s := newSim(t)
			s.add(ident("a", 1))
			s.add(ident("b", 2))
			s.dial("a", "b", "ab")
			s.dial("b", "a", "ba")
			order(s)
			win := s.checkOneConnection("a", "b")
			lose := map[string]string{"ab": "ba", "ba": "ab"}[win]
			for _, rid := range []string{"a", "b"} {
				if out := s.closedWith(rid, lose); out.Reason != Duplicate {
					t.Fatalf("%s closed the losing pipe %s with %v", rid, lose, out)
				}
			}
		})
	}
}

func runNewestFirst(s *sim) {
	for len(s.queue) > 0 {
		d := s.deliverable()
		s.deliver(d[len(d)-1])
	}
}

func runPipeFirst(s *sim, pipe string) {
	for len(s.queue) > 0 {
		i := s.deliverable()[0]
		for _, j := range s.deliverable() {
			if s.queue[j].pipe == pipe {
				i = j
				break
			}
		}
		s.deliver(i)
	}
}

// runCrossed delivers all frames in flight as one round, so each side acts
// before it sees what the other did in the same round.
func runCrossed(s *sim) {
	for len(s.queue) > 0 {
		for n := len(s.queue); n > 0; n-- {
			s.deliver(0)
		}
	}
}

// A fixed-RID peer restarted with a new generation is refused while its
// old generation's connection is alive, and admitted once liveness confirms
// the old one gone. An intent expecting another generation never admits it.
func TestHandshake_StaleGeneration(t *testing.T) {
	s := newSim(t)
	s.add(ident("a", 1))
	s.add(ident("b", 2))
	s.dial("a", "b", "old")
	s.run()
	s.checkOneConnection("a", "b")
	// b restarts (generation 3) and dials a, which still holds "old".
	s.add(ident("b", 3))
	s.dial("b", "a", "new1")
	s.run()
	if out := s.closedWith("a", "new1"); out.Reason != StaleGeneration || out.ByPeer {
		t.Fatalf("a closed new1 with %v", out)
	}
	if out := s.closedWith("b", "new1"); out.Reason != StaleGeneration || !out.ByPeer {
		t.Fatalf("b closed new1 with %v", out)
	}
	// Liveness confirms generation 2 gone.
	s.nodes["a"].adm.PeerLost("b", 2)
	s.dial("b", "a", "new2")
	s.run()
	if got := s.readyPipes("a"); len(got) != 1 || got[0] != "new2" {
		t.Fatalf("a ready %v, want new2", got)
	}
	// An intent bound to a descriptor's generation refuses any other one.
	s2 := newSim(t)
	s2.add(ident("a", 1))
	s2.add(ident("b", 7))
	s2.dialExpect("a", "b", "p", admission.Intent{Endpoint: "tcp://b", ExpectRID: "b", ExpectGeneration: 6, ConfigGeneration: 1})
	s2.run()
	if out := s2.closedWith("a", "p"); out.Reason != StaleGeneration || out.Send != FrameReject {
		t.Fatalf("a closed p with %v", out)
	}
	if len(s2.readyPipes("b")) != 0 {
		t.Fatal("b became ready")
	}
}

// A failed proof, on either side, is never ready.
func TestHandshake_AuthenticationFailure(t *testing.T) {
	for _, dialer := range []string{"a", "b"} {
		t.Run(dialer+" dials", func(t *testing.T) {
			s := newSim(t)
			s.add(ident("a", 1))
			s.add(ident("b", 2)).secret = "other"
			listener := map[string]string{"a": "b", "b": "a"}[dialer]
			s.dial(dialer, listener, "p")
			s.run()
			// The dialer verifies the listener's proof first and refuses.
			if out := s.closedWith(dialer, "p"); out.Reason != AuthFailed || out.ByPeer {
				t.Fatalf("dialer closed with %v", out)
			}
			if out := s.closedWith(listener, "p"); out.Reason != AuthFailed || !out.ByPeer {
				t.Fatalf("listener closed with %v", out)
			}
			if len(s.nodes["a"].ready)+len(s.nodes["b"].ready) != 0 {
				t.Fatal("a pipe became ready")
			}
		})
	}
	// The listener's proof verifies but the dialer's does not.
	s := newSim(t)
	s.add(ident("a", 1))
	s.add(ident("b", 2))
	s.dial("a", "b", "p")
	s.deliver(0) // hello
	s.deliver(0) // welcome
	m := s.nodes["b"].hs["p"]
	s.queue = s.queue[:0] // the real Auth is replaced by a forged one
	out := m.Step(s.now, Event{Kind: AuthReceived, ProofOK: false})
	if !out.Close || out.Send != FrameReject || out.Reason != AuthFailed || out.Ready {
		t.Fatalf("forged auth: %v", out)
	}
}

// Two Object Clients without Channel Server membership end NotRequired
// before ready, and the same intent is not dialled again.
func TestHandshake_NotRequired(t *testing.T) {
	client := func(id admission.Identity) admission.Identity {
		id.ObjectRole, id.ServerChannels = admission.RoleClient, 0
		return id
	}
	s := newSim(t)
	s.add(client(ident("a", 1)))
	s.add(client(ident("b", 2)))
	s.dial("a", "b", "p")
	s.run()
	if out := s.closedWith("a", "p"); out.Reason != NotRequired || out.Send != FrameReject {
		t.Fatalf("dialer: %v", out)
	}
	if out := s.closedWith("b", "p"); out.Reason != NotRequired || !out.ByPeer {
		t.Fatalf("listener: %v", out)
	}
	if s.nodes["a"].adm.ShouldDial(admission.Intent{Endpoint: "tcp://b", ExpectRID: "b", ConfigGeneration: 1}) {
		t.Fatal("the NotRequired intent would be dialled again")
	}
}

// The listener's checks before any proof, and frames out of order.
func TestHandshake_Refusals(t *testing.T) {
	local := ident("b", 2)
	tests := []struct {
		name   string
		events []Event
		want   Reason
	}{
		{"wrong mesh", []Event{{Kind: HelloReceived, Remote: func() admission.Identity { r := ident("a", 1); r.Mesh = "x"; return r }()}}, WrongMesh},
		{"version", []Event{{Kind: HelloReceived, Remote: func() admission.Identity { r := ident("a", 1); r.Protocol = 2; return r }()}}, Version},
		{"expected rid", []Event{{Kind: HelloReceived, Remote: ident("a", 1), ExpectRID: "c"}}, WrongRID},
		{"auth before hello", []Event{{Kind: AuthReceived, ProofOK: true}}, Protocol},
		{"batch before auth", []Event{{Kind: HelloReceived, Remote: ident("a", 1)}, {Kind: BatchReceived}}, Protocol},
		{"welcome to a listener", []Event{{Kind: HelloReceived, Remote: ident("a", 1)}, {Kind: WelcomeReceived}}, Protocol},
		{"malformed", []Event{{Kind: Malformed, Detail: "bad identity"}}, Protocol},
		{"rid collision", []Event{{Kind: HelloReceived, Remote: ident("b", 9)}, {Kind: AuthReceived, ProofOK: true}}, RIDCollision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Config{Timeout: timeout}, admission.New(local, nil), admission.Pipe{ID: "p"}, t0)
			var out Output
			for _, ev := range tt.events {
				out = m.Step(t0, ev)
			}
			if !out.Close || out.Send != FrameReject || out.Reason != tt.want || m.State() != Closed {
				t.Fatalf("out %v state %v, want a Reject(%v)", out, m.State(), tt.want)
			}
			if late := m.Step(t0, Event{Kind: BatchReceived}); late != (Output{}) {
				t.Fatalf("event after close: %v", late)
			}
		})
	}
}

func TestNew_InvalidConfigPanics(t *testing.T) {
	adm := admission.New(ident("a", 1), nil)
	for _, c := range []struct {
		cfg Config
		adm *admission.Machine
	}{{Config{}, adm}, {Config{Timeout: -1}, adm}, {Config{Timeout: 1}, nil}} {
		func() {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("New(%+v) panic = %v", c.cfg, err)
				}
			}()
			New(c.cfg, c.adm, admission.Pipe{ID: "p"}, t0)
		}()
	}
}

func TestEnumStrings(t *testing.T) {
	seen := map[string]bool{}
	for s := AwaitHello; s <= Closed; s++ {
		seen["s:"+s.String()] = true
	}
	for f := FrameHello; f <= FrameReject; f++ {
		seen["f:"+f.String()] = true
	}
	for _, r := range []Reason{WrongMesh, WrongRID, AuthFailed, Version, Capability, RIDCollision, StaleGeneration, NotRequired, Duplicate, Protocol, Timeout, NoIntent, ShuttingDown} {
		seen["r:"+r.String()] = true
	}
	for k := Dialed; k <= Tick; k++ {
		seen["k:"+k.String()] = true
	}
	if len(seen) != 8+5+13+8 {
		t.Fatalf("enum strings not distinct: %d", len(seen))
	}
	if State(0).String() != "state(0)" || Frame(0).String() != "frame(0)" || Reason(0).String() != "reject(0)" || EventKind(0).String() != "event(0)" {
		t.Fatal("unknown values not rendered")
	}
}
