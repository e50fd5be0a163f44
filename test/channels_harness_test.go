package test

import (
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// serverSpec is one Server node of a channel test mesh.
type serverSpec struct {
	rid     string
	weight  int
	budget  int64         // MailboxMessageBudget; 0 = default
	conc    int           // handler concurrency; 0 = default
	block   chan struct{} // when set, "block" waits on it
	handled atomic.Int64
	node    *routemesh.Node
}

// channelMesh starts the servers, then a client node that dials all of them
// (manual topology) with a Client role on channel. It returns the client.
func channelMesh(t *testing.T, channel string, servers []*serverSpec, clientSetup func(*routemesh.MeshBuilder)) *routemesh.Node {
	t.Helper()
	var eps []string
	for _, s := range servers {
		s := s
		if s.block == nil { // "block" returns at once unless the test holds it
			s.block = make(chan struct{})
			close(s.block)
		}
		o := zlink.NewOptions()
		m := o.AddRouteMesh("game").SetRoutingID(s.rid).ConfigureLiveness(fastLiveness)
		if s.budget > 0 {
			m.ConfigureRouterSocket(routemesh.SocketConfig{MailboxMessageBudget: s.budget})
		}
		m.Channel(channel).Server().SetWeight(s.weight).SetConcurrency(s.conc).
			HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) {
				s.handled.Add(1)
				return []byte(s.rid), nil
			}).
			HandleRequest("block", func(c *routemesh.Context, p []byte) ([]byte, error) {
				s.handled.Add(1)
				select {
				case <-s.block:
				case <-c.Done():
				}
				return []byte(s.rid), nil
			})
		h := startHost(t, o)
		s.node = h.Mesh("game")
		eps = append(eps, s.node.Endpoint())
	}
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("client").ConfigureLiveness(fastLiveness)
	for i, s := range servers {
		m.AddPeer(eps[i], s.rid)
	}
	if clientSetup != nil {
		clientSetup(m)
	} else {
		m.Channel(channel).Client()
	}
	c := startHost(t, o).Mesh("game")
	for _, s := range servers {
		waitPeerState(t, c, s.rid, routemesh.PeerReady)
	}
	return c
}

// lastSelection returns the client's last selection on channel.
func lastSelection(t *testing.T, n *routemesh.Node, channel string) *routemesh.Selection {
	t.Helper()
	for _, ch := range status(t, n).Channels {
		if ch.Name == channel {
			return ch.LastSelection
		}
	}
	return nil
}

func candidate(sel *routemesh.Selection, rid string) (routemesh.Candidate, bool) {
	if sel == nil {
		return routemesh.Candidate{}, false
	}
	for _, c := range sel.Candidates {
		if c.RID == rid {
			return c, true
		}
	}
	return routemesh.Candidate{}, false
}

// callFrom makes one channel call and returns the serving RID.
func callFrom(t *testing.T, n *routemesh.Node, channel, packet string) (string, error) {
	t.Helper()
	_, rid, err := n.CallFrom(ctxT(t, 5*time.Second), channel, packet, nil)
	return rid, err
}

// setWeight changes a server's weight and waits until the client's
// selection sees it (a call's candidate list shows the new weight).
func setWeight(t *testing.T, cli *routemesh.Node, s *serverSpec, channel string, w int) {
	t.Helper()
	if err := s.node.SetWeight(ctxT(t, 5*time.Second), channel, w); err != nil {
		t.Fatalf("SetWeight(%s, %d): %v", s.rid, w, err)
	}
	waitFor(t, s.rid+" weight seen by client", 5*time.Second, func() bool {
		_, _ = cli.Call(ctxT(t, 5*time.Second), channel, "echo", nil)
		c, ok := candidate(lastSelection(t, cli, channel), s.rid)
		return ok && int(c.Weight) == w
	})
}
