package test

// What a new user trips over (issue 12): error text that reads once, the
// handler's own RID, clean departures counted apart from losses, waiting
// for readiness, undoing a drain, running handlers in the tree.

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
	"github.com/zlink-go/zlink/wire"
)

var banPlayer = wire.NewPacket[string, string]("Ban")

// pairOf starts a server "srv" (set up by setup) and a client "cli" with a
// Client role on match, and waits until the client can call it.
func pairOf(t *testing.T, setup func(*routemesh.MeshBuilder)) (srv, cli *routemesh.Node) {
	t.Helper()
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness)
	setup(m)
	srv = startHost(t, o).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
	cli = startHost(t, oc).Mesh("game")
	if err := cli.WaitReady(ctxT(t, 10*time.Second), "match"); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return srv, cli
}

func TestErrors_RemoteTextReadsOnce(t *testing.T) {
	_, cli := pairOf(t, func(m *routemesh.MeshBuilder) {
		routemesh.OnRequest(m.Channel("match").Server(), banPlayer, func(*routemesh.Context, string) (string, error) {
			return "", errors.New("player banned")
		})
	})
	_, err := routemesh.Call(ctxT(t, 5*time.Second), cli, "match", banPlayer, "p1")
	if !errors.Is(err, zlink.ErrHandler) || err.Error() != "zlink: handler failed: player banned" {
		t.Fatalf("handler error: %v, want exactly %q", err, "zlink: handler failed: player banned")
	}
	_, err = cli.Call(ctxT(t, 5*time.Second), "match", "NoSuchPacket", nil)
	if !errors.Is(err, zlink.ErrUnknownPacket) || strings.Count(err.Error(), "unknown packet") != 1 {
		t.Fatalf("unknown packet: %v", err)
	}
	wrong := wire.NewPacket[int, string]("Ban")
	_, err = routemesh.Call(ctxT(t, 5*time.Second), cli, "match", wrong, 7)
	if err == nil || strings.Count(err.Error(), "zlink:") != 1 {
		t.Fatalf("bad payload: %v, want its cause stated once", err)
	}
}

func TestHandlerContext_GivesOwnRIDAndCaller(t *testing.T) {
	who := func(c *routemesh.Context, _ string) (string, error) { return c.RID + "<-" + c.From, nil }
	_, cli := pairOf(t, func(m *routemesh.MeshBuilder) {
		routemesh.OnRequest(m.Channel("match").Server(), banPlayer, who)
		routemesh.OnDirectRequest(m, banPlayer, who)
	})
	if got, err := routemesh.Call(ctxT(t, 5*time.Second), cli, "match", banPlayer, ""); err != nil || got != "srv<-cli" {
		t.Fatalf("channel handler context: %q %v, want srv<-cli", got, err)
	}
	if got, err := routemesh.CallNode(ctxT(t, 5*time.Second), cli, "srv", banPlayer, ""); err != nil || got != "srv<-cli" {
		t.Fatalf("direct handler context: %q %v, want srv<-cli", got, err)
	}
}

func TestPeers_GoodbyeCountsAsDepartedNotLost(t *testing.T) {
	// Fast heartbeats: frames are in flight both ways when a node stops.
	// The goodbye must still arrive (a closing node drains what its peer
	// still sends instead of resetting the connection). A steady silence
	// limit: only a lost goodbye, not a stall, may count as a loss.
	quiet := steadyLiveness
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(quiet).Channel("match").Server()
	srv := startHost(t, o).Mesh("game")
	const clients = 4
	for i := range clients {
		oc := zlink.NewOptions()
		oc.AddRouteMesh("game").SetRoutingID("c"+strconv.Itoa(i)).ConfigureLiveness(quiet).
			AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
		oc.SetLogger(testLogger(t))
		h, err := zlink.Start(ctxT(t, 10*time.Second), oc)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.WaitPeers(ctxT(t, 10*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		stopHost(t, h) // a clean exit: the client says goodbye
		deadline := time.Now().Add(10 * time.Second)
		for status(t, srv).Counters["peers_departed"] != uint64(i+1) {
			if time.Now().After(deadline) {
				st := status(t, srv)
				t.Fatalf("client %d: departure not counted: counters %v", i, st.Counters)
			}
			time.Sleep(5 * time.Millisecond) // poll interval of a condition wait
		}
	}
	if c := status(t, srv).Counters; c["peers_lost"] != 0 || c["peers_departed"] != clients {
		t.Fatalf("after %d clean exits: peers_lost=%d peers_departed=%d", clients, c["peers_lost"], c["peers_departed"])
	}
}

func TestWaitReady_FirstCallSucceeds(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness).Channel("match").Server().
		HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	srv := startHost(t, o).Mesh("game")
	for i := range 5 {
		oc := zlink.NewOptions()
		oc.AddRouteMesh("game").SetRoutingID("cli"+strconv.Itoa(i)).ConfigureLiveness(fastLiveness).
			AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
		cli := startHost(t, oc).Mesh("game")
		if err := cli.WaitReady(ctxT(t, 10*time.Second), "match"); err != nil {
			t.Fatalf("WaitReady: %v", err)
		}
		if out, err := cli.Call(ctxT(t, 5*time.Second), "match", "echo", []byte("hi")); err != nil || string(out) != "hi" {
			t.Fatalf("first call after WaitReady: %q %v", out, err)
		}
	}
	// Nobody serves "lobby": the wait ends with the context, as ErrNoTarget.
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("lonely").AddPeer(srv.Endpoint(), "srv").Channel("lobby").Client()
	lonely := startHost(t, oc).Mesh("game")
	start := time.Now()
	err := lonely.WaitReady(ctxT(t, 200*time.Millisecond), "lobby")
	if !errors.Is(err, zlink.ErrNoTarget) || time.Since(start) > 5*time.Second {
		t.Fatalf("WaitReady without a Server: %v after %v", err, time.Since(start))
	}
	var ce *routemesh.ConfigError
	if err := lonely.WaitReady(ctxT(t, time.Second), "nope"); !errors.As(err, &ce) {
		t.Fatalf("WaitReady on a channel without a role: %v", err)
	}
	if err := lonely.WaitPeers(ctxT(t, 10*time.Second), 1); err != nil {
		t.Fatalf("WaitPeers: %v", err)
	}
}

func TestUndrain_BackToSelectionWithoutRestart(t *testing.T) {
	a := &serverSpec{rid: "a", weight: 100}
	b := &serverSpec{rid: "b", weight: 100}
	cli := channelMesh(t, "match", []*serverSpec{a, b}, nil)
	revBefore := status(t, a.node).Revision
	if err := a.node.Drain(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the client skips the drained a", 5*time.Second, func() bool {
		c, ok := candidate(selectionAfterCall(t, cli), "a")
		return ok && c.Skip == "draining"
	})
	for range 50 {
		if rid, err := callFrom(t, cli, "match", "echo"); err != nil || rid != "b" {
			t.Fatalf("while a drains: %q %v", rid, err)
		}
	}
	if err := a.node.Undrain(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	st := status(t, a.node)
	if st.State != routemesh.NodeReady || st.Revision <= revBefore+1 {
		t.Fatalf("after Undrain: state %s revision %d (before drain %d)", st.State, st.Revision, revBefore)
	}
	waitFor(t, "a selected again", 5*time.Second, func() bool {
		rid, err := callFrom(t, cli, "match", "echo")
		return err == nil && rid == "a"
	})
	// Undrain of a node that is not draining changes nothing.
	if err := a.node.Undrain(ctxT(t, 5*time.Second)); err != nil || status(t, a.node).Revision != st.Revision {
		t.Fatalf("second Undrain: %v", err)
	}
}

// selectionAfterCall makes one call and returns the decision it recorded.
func selectionAfterCall(t *testing.T, cli *routemesh.Node) *routemesh.Selection {
	t.Helper()
	_, _ = cli.Call(ctxT(t, 5*time.Second), "match", "echo", nil)
	return lastSelection(t, cli, "match")
}

func TestTree_ShowsRunningHandlers(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int64
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness).
		SetHungDetection(64, 20*time.Millisecond)
	m.Channel("match").Server().HandleRequest("hold", func(c *routemesh.Context, _ []byte) ([]byte, error) {
		started.Add(1)
		<-release
		return nil, nil
	})
	h := startHost(t, o)
	srv := h.Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
	cli := startHost(t, oc).Mesh("game")
	if err := cli.WaitReady(ctxT(t, 10*time.Second), "match"); err != nil {
		t.Fatal(err)
	}
	const n = 3
	done := make(chan error, n)
	for range n {
		go func() {
			_, err := cli.Call(ctxT(t, 10*time.Second), "match", "hold", nil)
			done <- err
		}()
	}
	path := "/host/mesh:" + srv.Mesh() + "/channels/channel:match" // the documented tree path (docs/architecture.md)
	running := func() string {
		node, ok := findTree(h.Tree(), path)
		if !ok {
			return ""
		}
		return node.Info["running"]
	}
	waitFor(t, "the tree shows 3 running handlers", 5*time.Second, func() bool { return running() == strconv.Itoa(n) })
	close(release)
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the tree shows none running", 5*time.Second, func() bool { return running() == "0" })
}

func findTree(n supervisor.Node, path string) (supervisor.Node, bool) {
	if n.Path == path {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := findTree(c, path); ok {
			return f, true
		}
	}
	return supervisor.Node{}, false
}

// Every error that crosses the wire is matchable through the root package
// (the README lists the same set).
func TestErrors_EveryWireCodeReexportedByZlink(t *testing.T) {
	want := map[string]error{
		"no_target": zlink.ErrNoTarget, "timeout": zlink.ErrTimeout, "mailbox_full": zlink.ErrMailboxFull,
		"busy": zlink.ErrBusy, "peer_lost": zlink.ErrPeerLost, "too_large": zlink.ErrTooLarge,
		"handler": zlink.ErrHandler, "cancelled": zlink.ErrCancelled, "shutting_down": zlink.ErrShuttingDown,
		"protocol": zlink.ErrProtocol, "unknown_packet": zlink.ErrUnknownPacket, "bad_payload": zlink.ErrBadPayload,
	}
	n := 0
	for c := wire.Code(1); !strings.HasPrefix(c.String(), "code("); c++ {
		n++
		e, ok := want[c.String()]
		if !ok {
			t.Errorf("wire code %s has no zlink.Err value", c)
			continue
		}
		if err := wire.ErrorOf(c, "x"); !errors.Is(err, e) {
			t.Errorf("wire code %s rebuilds %v, which does not match its zlink value", c, err)
		}
	}
	if n != len(want) {
		t.Errorf("%d wire codes, %d zlink values", n, len(want))
	}
}
