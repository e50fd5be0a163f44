package test

// Contract tests of the channel, weight, target-selection and message-size
// contract items that need no Location Store.

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func TestContract_Channels_SeveralChannelsShareOneConnection(t *testing.T) {
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness)
	for _, ch := range []string{"match", "lobby", "chat"} {
		ch := ch
		m.Channel(ch).Server().HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) {
			return []byte(c.Channel), nil
		})
	}
	srv := startHost(t, o).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv").
		Channel("match").Client().Channel("lobby").Client().Channel("chat").Client()
	cli := startHost(t, oc).Mesh("game")
	waitPeerState(t, cli, "srv", routemesh.PeerReady)
	before, _ := status(t, cli).Peer("srv")
	for _, ch := range []string{"match", "lobby", "chat"} {
		out, err := cli.Call(ctxT(t, 5*time.Second), ch, "echo", nil)
		if err != nil || string(out) != ch {
			t.Fatalf("%s: %q %v", ch, out, err)
		}
	}
	st := status(t, cli)
	after, _ := st.Peer("srv")
	if len(st.Peers) != 1 || after.Pipe != before.Pipe {
		t.Fatalf("channels must share the one peer connection: before %s, after %+v", before.Pipe, st.Peers)
	}
	if n := len(status(t, srv).Peers); n != 1 {
		t.Fatalf("server has %d peer connections, want 1", n)
	}
}

func TestContract_Channels_ClientRoleIsNeverATarget(t *testing.T) {
	servers := []*serverSpec{{rid: "s1", weight: 100}}
	// The client node is the caller; a second node registers only a Client
	// role on the channel and must never be chosen.
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("c2").ConfigureLiveness(fastLiveness).Channel("match").Client()
	c2 := startHost(t, oc).Mesh("game")
	cli := channelMesh(t, "match", servers, func(m *routemesh.MeshBuilder) {
		m.Channel("match").Client().AddPeer(c2.Endpoint(), "c2")
	})
	waitPeerState(t, cli, "c2", routemesh.PeerReady)
	for i := 0; i < 50; i++ {
		rid, err := callFrom(t, cli, "match", "echo")
		if err != nil || rid != "s1" {
			t.Fatalf("call %d served by %q: %v", i, rid, err)
		}
	}
	// The check needs a recorded selection: with none it would pass
	// without looking at anything.
	sel := recordedSelection(t, cli, "match")
	if _, ok := candidate(sel, "s1"); !ok {
		t.Fatalf("the Server s1 is missing from the recorded selection %+v", sel)
	}
	if _, ok := candidate(sel, "c2"); ok {
		t.Fatalf("a Client role appeared as a selection candidate: %+v", sel)
	}
	if _, ok := candidate(sel, "client"); ok {
		t.Fatalf("the caller's own Client role appeared as a candidate: %+v", sel)
	}
}

func TestContract_Channels_NoServerMembershipNeedsNoFakeChannel(t *testing.T) {
	servers := []*serverSpec{{rid: "s1", weight: 100}}
	cli := channelMesh(t, "match", servers, nil)
	st := status(t, cli)
	for _, ch := range st.Channels {
		if ch.Role == "server" {
			t.Fatalf("the caller should have no Server role: %+v", st.Channels)
		}
	}
	if _, err := cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil); err != nil {
		t.Fatalf("channel call from a node without Server membership: %v", err)
	}
	// s1 has no Node-direct handler: its owner answers "unknown packet",
	// which only s1 itself can say.
	if _, err := cli.CallNode(ctxT(t, 5*time.Second), "s1", "nope", nil); !errors.Is(err, errUnknownPacket) {
		t.Fatalf("Node direct from a node without Server membership: %v, want s1's ErrUnknownPacket", err)
	}
	// No role on a channel: no call can start on it.
	if _, err := cli.Call(ctxT(t, time.Second), "lobby", "echo", nil); !errors.Is(err, routemesh.ErrNoChannelRole) {
		t.Fatalf("call without a role: %v, want ErrNoChannelRole", err)
	}
}

func TestContract_Weights_RangeAtStartupAndRuntime(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").Channel("match").Server()
	n := startHost(t, o).Mesh("game")
	for _, w := range []int{0, 100, 10000} {
		if err := n.SetWeight(ctxT(t, time.Second), "match", w); err != nil {
			t.Fatalf("runtime weight %d: %v", w, err)
		}
	}
	for _, w := range []int{-1, 10001} {
		err := n.SetWeight(ctxT(t, time.Second), "match", w)
		if !errors.Is(err, zlink.ErrConfig) || !errors.Is(err, routemesh.ErrWeightRange) {
			t.Fatalf("runtime weight %d: %v, want ErrWeightRange", w, err)
		}
	}
	if got := status(t, n).Channels[0].Weight; got != 10000 {
		t.Fatalf("weight after refused changes = %d, want 10000", got)
	}
}

func TestContract_Weights_ZeroAndDrainAffectOnlyNewSelection(t *testing.T) {
	block := make(chan struct{})
	s1 := &serverSpec{rid: "s1", weight: 100, block: block}
	s2 := &serverSpec{rid: "s2", weight: 100, block: make(chan struct{})}
	close(s2.block)
	cli := channelMesh(t, "match", []*serverSpec{s1, s2}, nil)
	inflight := blockOn(t, cli, s1, "match")

	// Weight 0 on s1: new calls go to s2 only; the submitted one still ends well.
	before, _ := status(t, cli).Peer("s1")
	setWeight(t, cli, s1, "match", 0)
	for i := 0; i < 30; i++ {
		if rid, err := callFrom(t, cli, "match", "echo"); err != nil || rid != "s2" {
			t.Fatalf("after weight 0, call served by %q: %v", rid, err)
		}
	}
	// Node direct is not a channel selection: still answered by s1 (which
	// has no Node-direct handler, so its owner says "unknown packet").
	if _, err := cli.CallNode(ctxT(t, 5*time.Second), "s1", "nope", nil); !errors.Is(err, errUnknownPacket) {
		t.Fatalf("Node direct to a weight-0 node: %v, want s1's ErrUnknownPacket", err)
	}
	// No reconnect for a weight change.
	if after, _ := status(t, cli).Peer("s1"); after.Pipe != before.Pipe {
		t.Fatalf("weight change reconnected: %s → %s", before.Pipe, after.Pipe)
	}
	close(block)
	if err := <-inflight; err != nil {
		t.Fatalf("work submitted before weight 0 must finish on s1: %v", err)
	}
}

// blockOn submits "block" calls until one lands on rid and returns the
// channel its result arrives on.
func blockOn(t *testing.T, cli *routemesh.Node, s *serverSpec, channel string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			out, rid, err := cli.CallFrom(ctxT(t, 10*time.Second), channel, "block", nil)
			if err != nil {
				done <- err
				return
			}
			if rid == s.rid {
				if string(out) != s.rid {
					done <- errors.New("wrong reply " + string(out))
				} else {
					done <- nil
				}
				return
			}
		}
	}()
	waitFor(t, "a block call on "+s.rid, 5*time.Second, func() bool { return s.handled.Load() > 0 })
	return done
}

func TestContract_Drain_AffectsOnlyNewSelection(t *testing.T) {
	s1 := &serverSpec{rid: "s1", weight: 100, block: make(chan struct{})}
	s2 := &serverSpec{rid: "s2", weight: 100, block: make(chan struct{})}
	close(s2.block)
	cli := channelMesh(t, "match", []*serverSpec{s1, s2}, nil)
	inflight := blockOn(t, cli, s1, "match")

	drained := make(chan error, 1)
	go func() { drained <- s1.node.Drain(ctxT(t, 10*time.Second)) }()
	waitFor(t, "client sees s1 draining", 5*time.Second, func() bool {
		_, _ = cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil)
		c, ok := candidate(lastSelection(t, cli, "match"), "s1")
		return ok && c.Skip == "draining"
	})
	for i := 0; i < 30; i++ {
		if rid, err := callFrom(t, cli, "match", "echo"); err != nil || rid != "s2" {
			t.Fatalf("during drain, call served by %q: %v", rid, err)
		}
	}
	// Node direct still reaches the draining node (its owner answers
	// "unknown packet": s1 has no Node-direct handler).
	if _, err := cli.CallNode(ctxT(t, 5*time.Second), "s1", "nope", nil); !errors.Is(err, errUnknownPacket) {
		t.Fatalf("Node direct to a draining node: %v, want s1's ErrUnknownPacket", err)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) while submitted work was still running", err)
	default:
	}
	close(s1.block)
	if err := <-inflight; err != nil {
		t.Fatalf("work submitted before the drain must be served: %v", err)
	}
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st := status(t, s1.node); !st.Drained || st.State != routemesh.NodeDraining {
		t.Fatalf("status after drain: state %s drained %v", st.State, st.Drained)
	}
}

func TestChannels_ServerAtCapacityIsSkipped(t *testing.T) {
	// One handler at a time and one queued message: a blocked handler plus
	// one waiting call fill s1.
	s1 := &serverSpec{rid: "s1", weight: 100, budget: 1, conc: 1, block: make(chan struct{})}
	s2 := &serverSpec{rid: "s2", weight: 100}
	cli := channelMesh(t, "match", []*serverSpec{s1, s2}, nil)
	inflight := blockOn(t, cli, s1, "match")
	// s1's heartbeats then report no headroom and callers skip it instead of
	// collecting ErrBusy.
	waitFor(t, "client sees s1 at capacity", 5*time.Second, func() bool {
		_, _ = cli.Call(ctxT(t, 300*time.Millisecond), "match", "echo", nil)
		c, ok := candidate(lastSelection(t, cli, "match"), "s1")
		return ok && c.Skip == "at capacity"
	})
	for i := 0; i < 30; i++ {
		if rid, err := callFrom(t, cli, "match", "echo"); err != nil || rid != "s2" {
			t.Fatalf("with s1 full, call served by %q: %v", rid, err)
		}
	}
	close(s1.block)
	if err := <-inflight; err != nil {
		t.Fatal(err)
	}
}

func TestChannels_AllFullIsBusyNotNoTarget(t *testing.T) {
	s1 := &serverSpec{rid: "s1", weight: 100, budget: 1, conc: 1, block: make(chan struct{})}
	cli := channelMesh(t, "match", []*serverSpec{s1}, nil)
	inflight := blockOn(t, cli, s1, "match")
	waitFor(t, "ErrBusy once s1 is full", 5*time.Second, func() bool {
		_, err := cli.Call(ctxT(t, 300*time.Millisecond), "match", "echo", nil)
		return errors.Is(err, zlink.ErrBusy)
	})
	setWeight := s1.node.SetWeight(ctxT(t, 5*time.Second), "match", 0)
	if setWeight != nil {
		t.Fatal(setWeight)
	}
	waitFor(t, "ErrNoTarget once the only Server has weight 0", 5*time.Second, func() bool {
		_, err := cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil)
		return errors.Is(err, zlink.ErrNoTarget)
	})
	close(s1.block)
	if err := <-inflight; err != nil {
		t.Fatal(err)
	}
}

func TestChannels_SelfSelectionGoesThroughAdmission(t *testing.T) {
	// The caller is the only Server of the channel, with a budget of one.
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("solo").
		ConfigureRouterSocket(routemesh.SocketConfig{MailboxMessageBudget: 1}).
		Channel("match").Server().SetConcurrency(1).HandleRequest("block", func(c *routemesh.Context, p []byte) ([]byte, error) {
		entered <- struct{}{}
		<-release
		return []byte("solo"), nil
	}).HandleRequest("echo", func(*routemesh.Context, []byte) ([]byte, error) { return []byte("solo"), nil })
	n := startHost(t, o).Mesh("game")
	if out, err := n.Call(ctxT(t, 5*time.Second), "match", "echo", nil); err != nil || string(out) != "solo" {
		t.Fatalf("self call: %q %v", out, err)
	}
	done := make(chan error, 1)
	go func() {
		// The echo's slot is released just after its reply: retry a busy.
		for {
			_, err := n.Call(ctxT(t, 10*time.Second), "match", "block", nil)
			if !errors.Is(err, zlink.ErrBusy) {
				done <- err
				return
			}
		}
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("block call ended early: %v", err)
	}
	// The one handler slot is busy and the one mailbox slot fills with the
	// next call: then self-selection refuses like a full remote Server.
	waitFor(t, "ErrBusy from a full local mailbox", 5*time.Second, func() bool {
		_, err := n.Call(ctxT(t, 300*time.Millisecond), "match", "echo", nil)
		return errors.Is(err, zlink.ErrBusy)
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestContract_Multicast_OncePerEligibleMemberRegardlessOfWeight(t *testing.T) {
	servers := []*serverSpec{
		{rid: "w1", weight: 1}, {rid: "w100", weight: 100}, {rid: "w10000", weight: 10000}, {rid: "w0", weight: 0},
	}
	var localHandled int
	cli := channelMesh(t, "match", servers, func(m *routemesh.MeshBuilder) {
		// The caller is itself a Server of the channel: not a multicast target.
		m.Channel("match").Server().SetWeight(10000).HandleRequest("echo", func(*routemesh.Context, []byte) ([]byte, error) {
			localHandled++
			return nil, nil
		})
	})
	res, err := cli.Multicast(ctxT(t, 5*time.Second), "match", "echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rids []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.RID, r.Err)
		}
		rids = append(rids, r.RID)
	}
	if want := []string{"w1", "w100", "w10000"}; !equalStrings(rids, want) {
		t.Fatalf("multicast members %v, want %v", rids, want)
	}
	for _, s := range servers {
		want := int64(1)
		if s.weight == 0 {
			want = 0
		}
		if got := s.handled.Load(); got != want {
			t.Fatalf("%s handled %d, want %d", s.rid, got, want)
		}
	}
	if localHandled != 0 {
		t.Fatal("multicast reached the local node")
	}
}

func TestContract_MessageSize_NoSettingNeededAndNoPartialOverLimit(t *testing.T) {
	// Default liveness: a 4 MiB message under -race on a loaded machine can
	// hold a connection's heartbeats up longer than the tests' fast
	// silence limits, and this test is about sizes, not silence.
	var got [][]byte
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("small").
		ConfigureRouterSocket(routemesh.SocketConfig{MailboxByteBudget: 1 << 20}).
		Channel("match").Server().HandleRequest("put", func(c *routemesh.Context, p []byte) ([]byte, error) {
		got = append(got, p)
		return []byte("ok"), nil
	})
	small := startHost(t, o).Mesh("game")
	o2 := zlink.NewOptions()
	o2.AddRouteMesh("game").SetRoutingID("big").
		Channel("match").Server().HandleRequest("put", func(c *routemesh.Context, p []byte) ([]byte, error) {
		return []byte{byte(len(p) >> 20)}, nil
	})
	big := startHost(t, o2).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").
		AddPeer(small.Endpoint(), "small").Channel("match").Client()
	cli := startHost(t, oc).Mesh("game")
	waitPeerState(t, cli, "small", routemesh.PeerReady)

	// Under the receiver's limit: fine, no size setting anywhere.
	half := bytes.Repeat([]byte{7}, 512<<10)
	if out, err := cli.Call(ctxT(t, 5*time.Second), "match", "put", half); err != nil || string(out) != "ok" {
		t.Fatalf("512 KiB: %q %v", out, err)
	}
	// Over it: refused at the sender at once; nothing reaches the handler.
	start := time.Now()
	_, err := cli.Call(ctxT(t, 30*time.Second), "match", "put", make([]byte, 2<<20))
	if !errors.Is(err, zlink.ErrTooLarge) {
		t.Fatalf("2 MiB to a 1 MiB receiver: %v, want ErrTooLarge", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("ErrTooLarge took %v: it must end at once, not at a timeout", time.Since(start))
	}
	if len(got) != 1 || len(got[0]) != len(half) {
		t.Fatalf("handler saw %d messages (want only the 512 KiB one)", len(got))
	}
	// A default node takes a 4 MiB message without any setting.
	oc2 := zlink.NewOptions()
	oc2.AddRouteMesh("game").SetRoutingID("cli2").
		AddPeer(big.Endpoint(), "big").Channel("match").Client()
	cli2 := startHost(t, oc2).Mesh("game")
	waitPeerState(t, cli2, "big", routemesh.PeerReady)
	out, err := cli2.Call(ctxT(t, 10*time.Second), "match", "put", make([]byte, 4<<20))
	if err != nil || len(out) != 1 || out[0] != 4 {
		t.Fatalf("4 MiB on defaults: %v %v", out, err)
	}
}

func TestChannels_WeightedSelectionMatchesWeights(t *testing.T) {
	servers := []*serverSpec{{rid: "a", weight: 100}, {rid: "b", weight: 300}, {rid: "c", weight: 600}}
	cli := channelMesh(t, "match", servers, func(m *routemesh.MeshBuilder) {
		m.Channel("match").Client().SetSelectionSeed(42)
	})
	const n = 3000
	for i := 0; i < n; i++ {
		if _, err := cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	// Chi-square goodness of fit, 2 degrees of freedom; p = 0.001 → 13.816.
	chi := 0.0
	for _, s := range servers {
		exp := float64(n) * float64(s.weight) / 1000
		d := float64(s.handled.Load()) - exp
		chi += d * d / exp
	}
	if chi > 13.816 || math.IsNaN(chi) {
		t.Fatalf("distribution a=%d b=%d c=%d does not match weights 1:3:6 (chi²=%.2f)",
			servers[0].handled.Load(), servers[1].handled.Load(), servers[2].handled.Load(), chi)
	}
}

func equalStrings(a, b []string) bool {
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
