// Command typed runs three Servers of channel "match" with weights 100, 300
// and 600 and a Client, all MeshNodes of mesh "game" in one process (each
// in its own host), and calls a typed packet: no byte slices in handlers
// or at the call site. Then it drains the heaviest Server, shows that it
// gets no new calls, and undoes the drain.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// JoinReq and JoinResult are the typed request and reply of JoinMatch.
type JoinReq struct{ Player string }

type JoinResult struct {
	Match  string
	Server string
}

// JoinMatch names the packet and fixes its Go types on both sides.
var JoinMatch = wire.NewPacket[JoinReq, JoinResult]("JoinMatch")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, 1000); err != nil {
		fmt.Fprintln(os.Stderr, "typed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, calls int) error {
	weights := map[string]int{"match-a": 100, "match-b": 300, "match-c": 600}
	servers := map[string]*routemesh.Node{}
	var endpoints []string
	for _, rid := range []string{"match-a", "match-b", "match-c"} {
		o := zlink.NewOptions()
		m := o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID(rid)
		routemesh.OnRequest(m.Channel("match").Server().SetWeight(weights[rid]), JoinMatch,
			func(c *routemesh.Context, req JoinReq) (JoinResult, error) {
				return JoinResult{Match: "m-" + req.Player, Server: c.RID}, nil
			})
		h, err := zlink.Start(ctx, o)
		if err != nil {
			return err
		}
		defer stop(h)
		servers[rid] = h.Mesh("game")
		endpoints = append(endpoints, h.Mesh("game").Endpoint())
	}

	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("gateway")
	for i, rid := range []string{"match-a", "match-b", "match-c"} {
		m.AddPeer(endpoints[i], rid)
	}
	m.Channel("match").Client()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		return err
	}
	defer stop(h)
	client := h.Mesh("game")
	if err := client.WaitPeers(ctx, 3); err != nil { // every Server, not just the first
		return err
	}

	count := func(n int) (map[string]int, error) {
		got := map[string]int{}
		for i := range n {
			res, err := routemesh.Call(ctx, client, "match", JoinMatch, JoinReq{Player: fmt.Sprint("p", i)})
			if err != nil {
				return nil, err
			}
			got[res.Server]++
		}
		return got, nil
	}
	got, err := count(calls)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "weighted: %s\n", shares(got, calls))

	// Drain match-c: it leaves new selection at once and finishes its work.
	if err := servers["match-c"].Drain(ctx); err != nil {
		return err
	}
	if err := waitPeerState(ctx, client, "match-c", routemesh.PeerDraining); err != nil {
		return err
	}
	got, err = count(calls / 4)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "match-c drained: it served %d of %d\n", got["match-c"], calls/4)

	// Undrain: back in selection without a restart.
	if err := servers["match-c"].Undrain(ctx); err != nil {
		return err
	}
	if err := waitPeerState(ctx, client, "match-c", routemesh.PeerReady); err != nil {
		return err
	}
	got, err = count(calls / 4)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "match-c undrained: back in selection (%s)\n", shares(got, calls/4))
	return nil
}

// waitPeerState waits until the client sees peer rid in state want (it
// hears a drain or an undrain from the peer's notice). There is no event
// for one peer's state, so it reads the status on a short ticker.
func waitPeerState(ctx context.Context, client *routemesh.Node, rid string, want routemesh.PeerState) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := client.Status(ctx)
		if err != nil {
			return err
		}
		if p, ok := st.Peer(rid); ok && p.State == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// shares formats the calls per Server as percentages.
func shares(got map[string]int, total int) string {
	var rids []string
	for rid := range got {
		rids = append(rids, rid)
	}
	sort.Strings(rids)
	parts := make([]string, len(rids))
	for i, rid := range rids {
		parts[i] = fmt.Sprintf("%s=%d%%", rid, (got[rid]*100+total/2)/total)
	}
	return strings.Join(parts, " ")
}

func stop(h *zlink.Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Stop(ctx)
}
