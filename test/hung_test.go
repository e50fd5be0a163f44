package test

import (
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// findNode returns the tree node whose path ends with suffix.
func findNode(n supervisor.Node, suffix string) (supervisor.Node, bool) {
	if len(n.Path) >= len(suffix) && n.Path[len(n.Path)-len(suffix):] == suffix {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := findNode(c, suffix); ok {
			return f, true
		}
	}
	return supervisor.Node{}, false
}

func TestHung_HandlersPastDeadlineAreReportedAndPauseAdmission(t *testing.T) {
	release := make(chan struct{})
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness).
		SetHungDetection(2, 20*time.Millisecond).
		Channel("match").Server().
		HandleRequest("stuck", func(c *routemesh.Context, p []byte) ([]byte, error) {
			<-release // ignores its context: a hung handler
			return nil, nil
		}).
		HandleRequest("echo", func(*routemesh.Context, []byte) ([]byte, error) { return []byte("ok"), nil })
	h := startHost(t, o)
	srv := h.Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).
		AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
	cli := startHost(t, oc).Mesh("game")
	t.Cleanup(func() { close(release) }) // runs before the hosts stop
	waitPeerState(t, cli, "srv", routemesh.PeerReady)

	// Two calls whose handlers outlive their callers' deadlines.
	for i := 0; i < 2; i++ {
		if _, err := cli.Call(ctxT(t, 100*time.Millisecond), "match", "stuck", nil); !errors.Is(err, zlink.ErrTimeout) {
			t.Fatalf("stuck call %d: %v, want ErrTimeout", i, err)
		}
	}
	waitFor(t, "two hung handlers reported", 5*time.Second, func() bool {
		st := status(t, srv)
		return st.Hung == 2 && st.AdmissionPaused
	})
	ch, ok := findNode(h.Tree(), "channel:match")
	if !ok || ch.Hung != 2 {
		t.Fatalf("tree: channel:match hung=%d (found %v)", ch.Hung, ok)
	}
	// No new work while paused: a busy answer, not a hang; live work is not killed.
	if _, err := srv.Call(ctxT(t, 2*time.Second), "match", "echo", nil); !errors.Is(err, zlink.ErrBusy) {
		t.Fatalf("call into a paused node: %v, want ErrBusy", err)
	}
	if _, err := srv.CallNode(ctxT(t, 2*time.Second), "srv", "x", nil); !errors.Is(err, zlink.ErrBusy) {
		t.Fatalf("direct call into a paused node: %v, want ErrBusy", err)
	}
}

func TestHung_AdmissionResumesWhenHandlersReturn(t *testing.T) {
	release := make(chan struct{})
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("srv").SetHungDetection(1, 20*time.Millisecond).
		Channel("match").Server().
		HandleRequest("stuck", func(c *routemesh.Context, p []byte) ([]byte, error) {
			<-release
			return nil, nil
		}).
		HandleRequest("echo", func(*routemesh.Context, []byte) ([]byte, error) { return []byte("ok"), nil })
	srv := startHost(t, o).Mesh("game")
	if _, err := srv.Call(ctxT(t, 100*time.Millisecond), "match", "stuck", nil); !errors.Is(err, zlink.ErrTimeout) {
		t.Fatalf("stuck call: %v", err)
	}
	waitFor(t, "paused", 5*time.Second, func() bool { return status(t, srv).AdmissionPaused })
	close(release)
	waitFor(t, "resumed", 5*time.Second, func() bool {
		st := status(t, srv)
		return !st.AdmissionPaused && st.Hung == 0
	})
	if out, err := srv.Call(ctxT(t, 2*time.Second), "match", "echo", nil); err != nil || string(out) != "ok" {
		t.Fatalf("after resume: %q %v", out, err)
	}
}
