package test

// Drain and weight rules beyond the contract items' main cases: the drain
// timeout, a draining local node and a draining multicast member left out
// of new targets, the default weight, a weight change confined to its
// channel, and SetWeight on a channel without a Server role.

import (
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func TestDrain_TimeoutEndsWithErrDrainTimeoutAndWorkStillServed(t *testing.T) {
	g := newBlockGate()
	g.closeAtCleanup(t)
	const drainTimeout = 300 * time.Millisecond
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("d").SetTimeouts(drainTimeout, 0).
		HandleDirectRequest("block", g.request).HandleDirectRequest("echo", echo)
	n := startHost(t, o).Mesh("game")
	inflight := goRequest(ctxT(t, 30*time.Second), n, "d", "block", []byte("x"))
	g.waitEntered(t)

	// The node's drain timeout passes first.
	start := time.Now()
	err := n.Drain(ctxT(t, 10*time.Second))
	if !errors.Is(err, routemesh.ErrDrainTimeout) {
		t.Fatalf("Drain with work running past the drain timeout: %v, want ErrDrainTimeout", err)
	}
	if el := time.Since(start); el < drainTimeout || el > 5*time.Second {
		t.Fatalf("Drain returned after %v, want about the %v drain timeout", el, drainTimeout)
	}
	// The caller's deadline passes first.
	start = time.Now()
	if err := n.Drain(ctxT(t, 100*time.Millisecond)); !errors.Is(err, routemesh.ErrDrainTimeout) {
		t.Fatalf("Drain past its context deadline: %v, want ErrDrainTimeout", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Drain took %v past a 100 ms context", el)
	}
	st := status(t, n)
	if st.State != routemesh.NodeDraining || st.Drained {
		t.Fatalf("after a timed-out drain: state %s drained %v, want draining and not drained", st.State, st.Drained)
	}
	// The submitted work is still served, and Node direct still works.
	if out, err := n.CallNode(ctxT(t, 5*time.Second), "d", "echo", []byte("y")); err != nil || string(out) != "echo:y" {
		t.Fatalf("Node direct on a draining node: %q %v", out, err)
	}
	g.open()
	wantReply(t, "work submitted before the drain", awaitOutcome(t, "block call", inflight, 5*time.Second), []byte("x"))
	if err := n.Drain(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("Drain once the work is done: %v", err)
	}
	if st := status(t, n); !st.Drained {
		t.Fatalf("not drained after a successful Drain: %+v", st)
	}
}

func TestDrain_LocalNodeLeavesItsOwnSelection(t *testing.T) {
	reply := func(rid string) routemesh.RequestHandler {
		return func(*routemesh.Context, []byte) ([]byte, error) { return []byte(rid), nil }
	}
	os2 := zlink.NewOptions()
	os2.AddRouteMesh("game").SetRoutingID("s2").ConfigureLiveness(fastLiveness).
		Channel("match").Server().HandleRequest("who", reply("s2"))
	s2 := startHost(t, os2).Mesh("game")
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("self").ConfigureLiveness(fastLiveness).AddPeer(s2.Endpoint(), "s2").
		Channel("match").Server().SetWeight(10000).HandleRequest("who", reply("self"))
	self := startHost(t, o).Mesh("game")
	waitPeerState(t, self, "s2", routemesh.PeerReady)

	// Before the drain the local node is a candidate (weight 10000 vs 100).
	waitFor(t, "a call served locally", 5*time.Second, func() bool {
		rid, err := callFrom(t, self, "match", "who")
		return err == nil && rid == "self"
	})
	if err := self.Drain(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 48; i++ {
		if rid, err := callFrom(t, self, "match", "who"); err != nil || rid != "s2" {
			t.Fatalf("call %d from a draining Server served by %q: %v", i, rid, err)
		}
	}
	sel := recordedSelection(t, self, "match")
	c, ok := candidate(sel, "self")
	if !ok || c.Skip != "draining" {
		t.Fatalf("draining local node in the selection: %+v (%+v)", c, sel)
	}
	// With the only other Server gone from targets there is no target.
	if err := s2.SetWeight(ctxT(t, 5*time.Second), "match", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ErrNoTarget with s2 at weight 0 and self draining", 5*time.Second, func() bool {
		_, err := self.Call(ctxT(t, 5*time.Second), "match", "who", nil)
		return errors.Is(err, zlink.ErrNoTarget)
	})
}

func TestMulticast_DrainingMemberExcluded(t *testing.T) {
	servers := []*serverSpec{{rid: "m1", weight: 100}, {rid: "m2", weight: 100}, {rid: "m3", weight: 100}}
	cli := channelMesh(t, "match", servers, nil)
	if err := servers[1].node.Drain(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitPeerState(t, cli, "m2", routemesh.PeerDraining)
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
	if !equalStrings(rids, []string{"m1", "m3"}) {
		t.Fatalf("multicast reached %v, want m1 and m3 (m2 drains)", rids)
	}
	for i, want := range []int64{1, 0, 1} {
		if got := servers[i].handled.Load(); got != want {
			t.Fatalf("%s handled %d multicast messages, want %d", servers[i].rid, got, want)
		}
	}
	// Every member draining: no target at all.
	for _, i := range []int{0, 2} {
		if err := servers[i].node.Drain(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		waitPeerState(t, cli, servers[i].rid, routemesh.PeerDraining)
	}
	if _, err := cli.Multicast(ctxT(t, 5*time.Second), "match", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("multicast with every member draining: %v, want ErrNoTarget", err)
	}
}

func TestWeights_DefaultIs100(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness).
		Channel("match").Server().HandleRequest("echo", echo)
	srv := startHost(t, o).Mesh("game")
	if ch := status(t, srv).Channels; len(ch) != 1 || ch[0].Weight != 100 || ch[0].Role != "server" {
		t.Fatalf("Server without SetWeight: %+v, want weight 100", ch)
	}
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv").
		Channel("match").Client()
	cli := startHost(t, oc).Mesh("game")
	waitPeerState(t, cli, "srv", routemesh.PeerReady)
	for i := 0; i < 32; i++ {
		if _, err := cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	c, ok := candidate(recordedSelection(t, cli, "match"), "srv")
	if !ok || c.Weight != 100 || c.Skip != "" {
		t.Fatalf("peer's view of a default-weight Server: %+v", c)
	}
}

func TestWeights_ChangeLeavesOtherChannelsAlone(t *testing.T) {
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness)
	m.Channel("match").Server().SetWeight(300).HandleRequest("echo", echo)
	m.Channel("lobby").Server().SetWeight(200).HandleRequest("echo", echo)
	srv := startHost(t, o).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv").
		Channel("match").Client().Channel("lobby").Client()
	cli := startHost(t, oc).Mesh("game")
	waitPeerState(t, cli, "srv", routemesh.PeerReady)
	pipe := status(t, cli).Peers[0].Pipe

	if err := srv.SetWeight(ctxT(t, 5*time.Second), "match", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "weight 0 on match reaches the client", 5*time.Second, func() bool {
		_, err := cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil)
		return errors.Is(err, zlink.ErrNoTarget)
	})
	// lobby is untouched: still served, still weight 200 on both sides.
	for i := 0; i < 32; i++ {
		if out, err := cli.Call(ctxT(t, 5*time.Second), "lobby", "echo", nil); err != nil || string(out) != "echo:" {
			t.Fatalf("lobby call %d after a match weight change: %q %v", i, out, err)
		}
	}
	c, ok := candidate(recordedSelection(t, cli, "lobby"), "srv")
	if !ok || c.Weight != 200 || c.Skip != "" {
		t.Fatalf("lobby candidate after a match weight change: %+v", c)
	}
	weights := map[string]int{}
	for _, ch := range status(t, srv).Channels {
		weights[ch.Name] = ch.Weight
	}
	if weights["match"] != 0 || weights["lobby"] != 200 {
		t.Fatalf("server weights %v, want match 0 and lobby 200", weights)
	}
	if st := status(t, cli); st.Peers[0].Pipe != pipe || st.Counters["peers_lost"] != 0 {
		t.Fatalf("weight change reconnected: %s → %+v", pipe, st.Peers)
	}
}

func TestWeights_SetWeightOnUnknownChannelRefused(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("srv").
		Channel("match").Server().SetWeight(42).HandleRequest("echo", echo).Mesh().
		Channel("lobby").Client()
	n := startHost(t, o).Mesh("game")
	before := status(t, n)
	for _, ch := range []string{"nope", "lobby", ""} {
		err := n.SetWeight(ctxT(t, 5*time.Second), ch, 10)
		if !errors.Is(err, routemesh.ErrUnknownChannel) || !errors.Is(err, zlink.ErrConfig) {
			t.Fatalf("SetWeight(%q): %v, want ErrUnknownChannel", ch, err)
		}
		var ce *routemesh.ConfigError
		if !errors.As(err, &ce) || ce.Mesh != "game" || ce.Channel != ch {
			t.Fatalf("SetWeight(%q): %v does not name mesh and channel", ch, err)
		}
	}
	after := status(t, n)
	if after.Revision != before.Revision {
		t.Fatalf("a refused SetWeight changed the revision %d → %d", before.Revision, after.Revision)
	}
	for _, ch := range after.Channels {
		if ch.Name == "match" && ch.Weight != 42 {
			t.Fatalf("match weight %d after refused changes, want 42", ch.Weight)
		}
	}
}
