package admission

import (
	"errors"
	"testing"
)

const sec = "shared:fp-1"

func ident(rid string, gen uint64) Identity {
	return Identity{
		Mesh: "game", RID: rid, Generation: gen, Revision: 1,
		ObjectRole: RoleServer, ServerChannels: 1,
		SecurityIdentity: sec, Protocol: 1, Capabilities: []string{"batch", "revision"},
	}
}

func outbound(id string, in Intent) Pipe { return Pipe{ID: id, Outbound: true, Intent: &in} }
func inbound(id string) Pipe             { return Pipe{ID: id} }

func TestAdmit_Rules(t *testing.T) {
	local := ident("b", 7)
	anyIntent := Intent{Endpoint: "tcp://x:1", ConfigGeneration: 1}
	clientNoServer := func(id Identity) Identity { id.ObjectRole = RoleClient; id.ServerChannels = 0; return id }

	tests := []struct {
		name   string
		local  Identity
		pipe   Pipe
		remote func(Identity) Identity
		auth   bool
		want   Decision
	}{
		{"accept inbound", local, inbound("p"), nil, true, Decision{Verdict: Accept}},
		{"accept outbound", local, outbound("p", anyIntent), nil, true, Decision{Verdict: Accept}},
		{"wrong mesh", local, inbound("p"), func(r Identity) Identity { r.Mesh = "other"; r.SecurityIdentity = "x"; return r }, false,
			Decision{Reject, WrongMesh, "p"}},
		{"not authenticated", local, inbound("p"), nil, false, Decision{Reject, AuthFailed, "p"}},
		{"other security identity", local, inbound("p"), func(r Identity) Identity { r.SecurityIdentity = "shared:fp-2"; return r }, true,
			Decision{Reject, AuthFailed, "p"}},
		{"rid is not a security identity", local, inbound("p"), func(r Identity) Identity { r.SecurityIdentity = ""; return r }, true,
			Decision{Reject, AuthFailed, "p"}},
		{"intent expects other security", local, outbound("p", Intent{Endpoint: "e", ExpectSecurity: "shared:fp-9"}), nil, true,
			Decision{Reject, AuthFailed, "p"}},
		{"intent expects same security", local, outbound("p", Intent{Endpoint: "e", ExpectSecurity: sec}), nil, true,
			Decision{Verdict: Accept}},
		{"protocol version", local, inbound("p"), func(r Identity) Identity { r.Protocol = 2; return r }, true,
			Decision{Reject, Version, "p"}},
		{"missing capability", local, inbound("p"), func(r Identity) Identity { r.Capabilities = []string{"batch"}; return r }, true,
			Decision{Reject, Capability, "p"}},
		{"expected rid differs", local, outbound("p", Intent{Endpoint: "e", ExpectRID: "zz"}), nil, true,
			Decision{Reject, WrongRID, "p"}},
		{"expected rid matches", local, outbound("p", Intent{Endpoint: "e", ExpectRID: "a"}), nil, true,
			Decision{Verdict: Accept}},
		{"generation 0", local, inbound("p"), func(r Identity) Identity { r.Generation = 0; return r }, true,
			Decision{Reject, StaleGeneration, "p"}},
		{"expected generation differs", local, outbound("p", Intent{Endpoint: "e", ExpectRID: "a", ExpectGeneration: 4}), nil, true,
			Decision{Reject, StaleGeneration, "p"}},
		{"expected generation matches", local, outbound("p", Intent{Endpoint: "e", ExpectRID: "a", ExpectGeneration: 3}), nil, true,
			Decision{Verdict: Accept}},
		{"rid collision", local, inbound("p"), func(r Identity) Identity { r.RID = "b"; return r }, true,
			Decision{Reject, RIDCollision, "p"}},
		{"outbound without intent", local, Pipe{ID: "p", Outbound: true}, nil, true,
			Decision{Reject, NoIntent, "p"}},
		{"both object clients without servers", clientNoServer(local), inbound("p"), clientNoServer, true,
			Decision{NotRequired, NotRequiredPair, "p"}},
		{"weight-0 server membership still needs a connection", clientNoServer(local), inbound("p"),
			func(r Identity) Identity { r = clientNoServer(r); r.ServerChannels = 1; return r }, true, Decision{Verdict: Accept}},
		{"one side object server", clientNoServer(local), inbound("p"),
			func(r Identity) Identity { r = clientNoServer(r); r.ObjectRole = RoleServer; return r }, true, Decision{Verdict: Accept}},
		{"object role none", clientNoServer(local), inbound("p"),
			func(r Identity) Identity { r = clientNoServer(r); r.ObjectRole = RoleNone; return r }, true, Decision{Verdict: Accept}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.local, []string{"batch", "revision"})
			remote := ident("a", 3)
			if tt.remote != nil {
				remote = tt.remote(remote)
			}
			got := m.Admit(tt.pipe, remote, tt.auth)
			if got != tt.want {
				t.Fatalf("Admit = %+v, want %+v", got, tt.want)
			}
			_, _, cur := m.Current(remote.RID)
			if wantCur := got.Verdict == Accept; cur != wantCur || m.IsCurrent(tt.pipe.ID) != wantCur {
				t.Fatalf("current = %v, IsCurrent = %v, want %v", cur, m.IsCurrent(tt.pipe.ID), wantCur)
			}
		})
	}
}

func TestNeedsConnection(t *testing.T) {
	c := func(role ObjectRole, servers int) Identity {
		return Identity{ObjectRole: role, ServerChannels: servers}
	}
	tests := []struct {
		a, b Identity
		want bool
	}{
		{c(RoleClient, 0), c(RoleClient, 0), false},
		{c(RoleClient, 1), c(RoleClient, 0), true},
		{c(RoleClient, 0), c(RoleClient, 1), true},
		{c(RoleClient, 0), c(RoleServer, 0), true},
		{c(RoleNone, 0), c(RoleClient, 0), true},
		{c(RoleNone, 0), c(RoleNone, 0), true},
		{c(RoleServer, 0), c(RoleServer, 0), true},
	}
	for _, tt := range tests {
		if got := NeedsConnection(tt.a, tt.b); got != tt.want {
			t.Errorf("NeedsConnection(%v/%d, %v/%d) = %v, want %v",
				tt.a.ObjectRole, tt.a.ServerChannels, tt.b.ObjectRole, tt.b.ServerChannels, got, tt.want)
		}
		if NeedsConnection(tt.a, tt.b) != NeedsConnection(tt.b, tt.a) {
			t.Errorf("NeedsConnection is not symmetric")
		}
	}
}

func TestInitiator(t *testing.T) {
	tests := []struct {
		l, r string
		want bool
	}{
		{"a", "b", true}, {"b", "a", false}, {"a", "a", false},
		{"node-10", "node-9", true}, // byte order, not numeric
		{"Z", "a", true},            // upper case sorts first in bytes
		{"ab", "abc", true},
		{"\xff", "\x7f", false},
	}
	for _, tt := range tests {
		if got := Initiator(tt.l, tt.r); got != tt.want {
			t.Errorf("Initiator(%q, %q) = %v, want %v", tt.l, tt.r, got, tt.want)
		}
	}
}

func TestNew_InvalidLocalPanics(t *testing.T) {
	noSec := ident("a", 1)
	noSec.SecurityIdentity = ""
	for _, id := range []Identity{ident("", 1), ident("a", 0), {RID: "a", Generation: 1}, noSec} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, ErrInvalidIdentity) {
					t.Errorf("New(%+v) panic = %v, want ErrInvalidIdentity", id, err)
				}
			}()
			New(id, nil)
		}()
	}
}

// Both sides dial each other with the same generation. The arbiter (the
// smaller RID, "a") keeps whichever pipe it declares ready first and refuses
// the other, before ready; it never replaces a ready pipe.
func TestAdmit_ArbiterKeepsFirstReadyPipe(t *testing.T) {
	in := Intent{Endpoint: "e", ConfigGeneration: 1}
	a := New(ident("a", 1), nil)
	// Both handshakes are under way: neither is refused yet.
	if d := a.Check(inbound("ba"), ident("b", 2), true); d.Verdict != Accept {
		t.Fatalf("check ba: %+v", d)
	}
	if d := a.Check(outbound("ab", in), ident("b", 2), true); d.Verdict != Accept {
		t.Fatalf("check ab: %+v", d)
	}
	if a.IsCurrent("ab") || a.IsCurrent("ba") {
		t.Fatal("Check installed a pipe")
	}
	// "ba" completes first: it is kept even though a dialled "ab".
	if d := a.Admit(inbound("ba"), ident("b", 2), true); d.Verdict != Accept {
		t.Fatalf("admit ba: %+v", d)
	}
	if d := a.Admit(outbound("ab", in), ident("b", 2), true); d != (Decision{Duplicate, DuplicatePipe, "ab"}) {
		t.Fatalf("admit ab after ba: %+v", d)
	}
	// A third pipe is refused early, while its handshake runs.
	if d := a.Check(inbound("ba2"), ident("b", 2), true); d != (Decision{Duplicate, DuplicatePipe, "ba2"}) {
		t.Fatalf("check ba2: %+v", d)
	}
	if id, _, ok := a.Current("b"); !ok || id != "ba" {
		t.Fatalf("current = %q %v, want ba", id, ok)
	}
	// Closing the loser changes nothing.
	a.PipeClosed("ab")
	if id, _, ok := a.Current("b"); !ok || id != "ba" {
		t.Fatalf("after closing loser: current %q %v", id, ok)
	}
}

// The follower (the larger RID) refuses no duplicate itself: it admits the
// pipe the arbiter declared ready, replacing an older pipe of the same
// lifecycle that the arbiter has already let go.
func TestAdmit_FollowerFollowsArbiter(t *testing.T) {
	in := Intent{Endpoint: "e", ConfigGeneration: 1}
	b := New(ident("b", 2), nil)
	if d := b.Admit(inbound("ab"), ident("a", 1), true); d.Verdict != Accept {
		t.Fatalf("first pipe: %+v", d)
	}
	if d := b.Check(outbound("ba", in), ident("a", 1), true); d.Verdict != Accept {
		t.Fatalf("follower check of a second pipe: %+v", d)
	}
	if d := b.Admit(outbound("ba", in), ident("a", 1), true); d != (Decision{Replace, DuplicatePipe, "ab"}) {
		t.Fatalf("follower admit of a second pipe: %+v", d)
	}
	if !b.IsCurrent("ba") || b.IsCurrent("ab") {
		t.Fatalf("ba current %v, ab current %v", b.IsCurrent("ba"), b.IsCurrent("ab"))
	}
	if !Arbiter("a", "b") || Arbiter("b", "a") || Arbiter("a", "a") {
		t.Fatal("Arbiter is not the smaller RID")
	}
}

func TestAdmit_SameDiallerKeepsIncumbent(t *testing.T) {
	in := Intent{Endpoint: "e", ConfigGeneration: 1}
	a := New(ident("a", 1), nil)
	a.Admit(outbound("p1", in), ident("b", 2), true)
	if d := a.Admit(outbound("p2", in), ident("b", 2), true); d != (Decision{Duplicate, DuplicatePipe, "p2"}) {
		t.Fatalf("second pipe from the same dialler: %+v", d)
	}
	if d := a.Admit(outbound("p1", in), ident("b", 2), true); d.Verdict != Accept {
		t.Fatalf("same pipe again: %+v", d)
	}
}

func TestAdmit_RestartedPeerDeferredUntilLivenessConfirms(t *testing.T) {
	m := New(ident("a", 1), nil)
	if d := m.Admit(inbound("old"), ident("fixed", 10), true); d.Verdict != Accept {
		t.Fatalf("old generation: %+v", d)
	}
	// The peer restarted (same fixed RID, new generation) while the old
	// connection has not been confirmed gone.
	if d := m.Admit(inbound("new1"), ident("fixed", 11), true); d != (Decision{Defer, OldGenerationAlive, "new1"}) {
		t.Fatalf("new generation before liveness: %+v", d)
	}
	// A late loss report about another generation is ignored.
	m.PeerLost("fixed", 11)
	m.PeerLost("fixed", 9)
	if d := m.Admit(inbound("new2"), ident("fixed", 11), true); d.Verdict != Defer {
		t.Fatalf("after unrelated PeerLost: %+v", d)
	}
	if !m.IsCurrent("old") {
		t.Fatal("old pipe lost currency through a late event")
	}
	m.PeerLost("fixed", 10)
	if m.IsCurrent("old") {
		t.Fatal("old pipe still current after liveness confirmed it gone")
	}
	if d := m.Admit(inbound("new3"), ident("fixed", 11), true); d.Verdict != Accept {
		t.Fatalf("after PeerLost: %+v", d)
	}
	// Late frames and events of the old generation change nothing.
	if m.IsCurrent("old") || m.IsCurrent("new1") || m.IsCurrent("new2") {
		t.Fatal("a stale pipe is current")
	}
	m.PipeClosed("old")
	m.PeerLost("fixed", 10)
	if id, gen, ok := m.Current("fixed"); !ok || id != "new3" || gen != 11 {
		t.Fatalf("current = %q/%d/%v, want new3/11", id, gen, ok)
	}
}

func TestAdmit_GenerationComparedForEqualityOnly(t *testing.T) {
	m := New(ident("a", 1), nil)
	m.Admit(inbound("old"), ident("fixed", 50), true)
	// A numerically smaller generation is just another lifecycle.
	if d := m.Admit(inbound("new"), ident("fixed", 3), true); d.Verdict != Defer {
		t.Fatalf("smaller generation: %+v", d)
	}
	m.PeerLost("fixed", 50)
	if d := m.Admit(inbound("new"), ident("fixed", 3), true); d.Verdict != Accept {
		t.Fatalf("smaller generation after loss: %+v", d)
	}
}

func TestAdmit_RestartedOutboundNeedsLiveIntent(t *testing.T) {
	m := New(ident("a", 1), nil)
	old := Intent{Endpoint: "tcp://fixed:1", ExpectRID: "fixed", ConfigGeneration: 1}
	m.Admit(outbound("old", old), ident("fixed", 10), true)
	m.PeerLost("fixed", 10)
	// The configuration moved on (generation 2) before the redial finished:
	// the old intent no longer wants this peer.
	if !m.ShouldDial(Intent{Endpoint: "tcp://fixed:1", ExpectRID: "fixed", ConfigGeneration: 2}) {
		t.Fatal("new configuration generation should dial")
	}
	if m.ShouldDial(old) {
		t.Fatal("superseded intent should not dial")
	}
	if d := m.Admit(outbound("late", old), ident("fixed", 11), true); d != (Decision{Reject, NoIntent, "late"}) {
		t.Fatalf("superseded intent: %+v", d)
	}
	cur := Intent{Endpoint: "tcp://fixed:1", ExpectRID: "fixed", ConfigGeneration: 2}
	if d := m.Admit(outbound("new", cur), ident("fixed", 11), true); d.Verdict != Accept {
		t.Fatalf("live intent: %+v", d)
	}
}

func TestAdmit_PipeClosedEndsCurrent(t *testing.T) {
	m := New(ident("a", 1), nil)
	m.Admit(inbound("p1"), ident("b", 2), true)
	m.PipeClosed("unknown")
	if !m.IsCurrent("p1") {
		t.Fatal("closing an unknown pipe changed the current pipe")
	}
	m.PipeClosed("p1")
	if m.IsCurrent("p1") {
		t.Fatal("closed pipe still current")
	}
	if _, _, ok := m.Current("b"); ok {
		t.Fatal("peer still has a current pipe")
	}
	if d := m.Admit(inbound("p2"), ident("b", 2), true); d.Verdict != Accept {
		t.Fatalf("reconnect of the same lifecycle: %+v", d)
	}
}

func TestShouldDial_NotRequiredIsTerminalPerIntent(t *testing.T) {
	local := ident("a", 1)
	local.ObjectRole, local.ServerChannels = RoleClient, 0
	remote := ident("b", 2)
	remote.ObjectRole, remote.ServerChannels = RoleClient, 0
	m := New(local, nil)

	in := Intent{Endpoint: "tcp://b:1", ConfigGeneration: 1}
	if !m.ShouldDial(in) {
		t.Fatal("fresh intent should dial")
	}
	if d := m.Admit(outbound("p1", in), remote, true); d.Verdict != NotRequired {
		t.Fatalf("Admit = %+v, want NotRequired", d)
	}
	if m.ShouldDial(in) {
		t.Fatal("same intent dialled again after NotRequired")
	}
	changed := []Intent{
		{Endpoint: "tcp://b:2", ConfigGeneration: 1},
		{Endpoint: "tcp://b:1", ExpectRID: "b", ConfigGeneration: 1},
		{Endpoint: "tcp://b:1", ConfigGeneration: 2},
	}
	for i, c := range changed {
		if !m.ShouldDial(c) {
			t.Fatalf("changed intent %d not checked again", i)
		}
		if d := m.Admit(outbound("q", c), remote, true); d.Verdict != NotRequired {
			t.Fatalf("changed intent %d: %+v", i, d)
		}
		if m.ShouldDial(c) {
			t.Fatalf("changed intent %d checked more than once", i)
		}
	}
	// An inbound NotRequired pipe does not poison any intent.
	if d := m.Admit(inbound("r"), remote, true); d.Verdict != NotRequired {
		t.Fatalf("inbound: %+v", d)
	}
	if !m.ShouldDial(Intent{Endpoint: "tcp://b:3", ConfigGeneration: 2}) {
		t.Fatal("unrelated intent blocked")
	}
}

func TestEnumStrings(t *testing.T) {
	seen := map[string]bool{}
	for v := Accept; v <= Defer; v++ {
		seen[v.String()] = true
	}
	for _, r := range []Reason{WrongMesh, WrongRID, AuthFailed, Version, Capability, RIDCollision, StaleGeneration, OldGenerationAlive, NotRequiredPair, DuplicatePipe, NoIntent} {
		seen["r:"+r.String()] = true
	}
	for o := RoleNone; o <= RoleServer; o++ {
		seen["o:"+o.String()] = true
	}
	if len(seen) != 6+11+3 {
		t.Fatalf("enum strings not distinct: %v", seen)
	}
	if Verdict(0).String() != "verdict(0)" || Reason(99).String() != "reject(99)" || ObjectRole(0).String() != "object-role(0)" {
		t.Fatal("unknown values not rendered")
	}
}
