// Command lobby is a small game back end that uses the pieces together,
// all MeshNodes of mesh "game" in one process over the in-memory Location
// Store (automatic topology):
//
//   - two match Servers (channel "match", typed JoinMatch) pair players
//     into rooms of two; each keeps its rooms to itself, one request at a
//     time, and announces every room that fills on the fanout channel
//     "events";
//   - a lobby node serves channel "lobby" (typed Enter): it forwards each
//     player to a match Server chosen by weight, and subscribes to
//     "events" to count the rooms that started;
//   - a gateway (the players' edge) enters players through the lobby.
//
// Halfway it drains one match Server: the next players all go to the
// other one, and no call fails.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

type (
	// JoinReq asks a match Server for a seat; JoinResult names the room.
	JoinReq    struct{ Player string }
	JoinResult struct {
		Room   string
		Server string
	}
	// EnterReq is a player at the lobby; EnterResult says where they play.
	EnterReq    struct{ Player string }
	EnterResult struct{ Room, Server string }
)

var (
	JoinMatch = wire.NewPacket[JoinReq, JoinResult]("JoinMatch")
	Enter     = wire.NewPacket[EnterReq, EnterResult]("Enter")
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, 16); err != nil {
		fmt.Fprintln(os.Stderr, "lobby:", err)
		os.Exit(1)
	}
}

// matchServer pairs players into rooms of two. Its handler runs one
// request at a time (SetConcurrency(1)), so the rooms need no lock.
type matchServer struct {
	rid     string
	waiting string // the player waiting for a partner
	rooms   int
	pub     func() *fanout.Publisher
	alone   atomic.Int64 // players waiting, for the report
}

func (m *matchServer) join(c *routemesh.Context, req JoinReq) (JoinResult, error) {
	if m.waiting == "" {
		m.waiting = req.Player
		m.alone.Store(1)
		return JoinResult{Room: fmt.Sprintf("%s-room%d", m.rid, m.rooms+1), Server: m.rid}, nil
	}
	m.rooms++
	room := fmt.Sprintf("%s-room%d", m.rid, m.rooms)
	if err := m.pub().Publish("room-started", []byte(room+":"+m.waiting+","+req.Player)); err != nil {
		return JoinResult{}, err
	}
	m.waiting = ""
	m.alone.Store(0)
	return JoinResult{Room: room, Server: m.rid}, nil
}

func run(ctx context.Context, out io.Writer, players int) error {
	store := location.NewMemory()
	defer store.Close()
	var hosts []*zlink.Host
	defer func() {
		for i := len(hosts) - 1; i >= 0; i-- {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = hosts[i].Stop(sctx)
			cancel()
		}
	}()
	start := func(o *zlink.Options) (*zlink.Host, error) {
		h, err := zlink.Start(ctx, o.SetLocationStore(store))
		if err == nil {
			hosts = append(hosts, h)
		}
		return h, err
	}
	events := fanout.PublisherConfig{Channel: "events", HeartbeatInterval: 50 * time.Millisecond, TTL: time.Second}

	// Two match Servers, each also a fanout publisher of "events".
	matches := map[string]*routemesh.Node{}
	var servers []*matchServer
	for _, rid := range []string{"match-a", "match-b"} {
		ms := &matchServer{rid: rid}
		servers = append(servers, ms)
		o := zlink.NewOptions()
		m := o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix(rid)
		routemesh.OnRequest(m.Channel("match").Server().SetConcurrency(1), JoinMatch, ms.join)
		o.AddFanoutPublisher(events)
		h, err := start(o)
		if err != nil {
			return err
		}
		ms.pub = func() *fanout.Publisher { return h.Publisher("events") }
		matches[rid] = h.Mesh("game")
	}

	// The lobby: forwards players to a match Server, counts started rooms.
	var started atomic.Int64
	ol := zlink.NewOptions()
	lm := ol.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix("lobby")
	lm.Channel("match").Client()
	var lobby *routemesh.Node
	routemesh.OnRequest(lm.Channel("lobby").Server(), Enter, func(c *routemesh.Context, req EnterReq) (EnterResult, error) {
		res, err := routemesh.Call(c, lobby, "match", JoinMatch, JoinReq(req))
		return EnterResult{Room: res.Room, Server: res.Server}, err
	})
	ol.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "events", Automatic: true, PollInterval: 20 * time.Millisecond,
		ReceiveTimeout: time.Second, Handler: func(fanout.Message) { started.Add(1) }})
	lh, err := start(ol)
	if err != nil {
		return err
	}
	lobby = lh.Mesh("game")
	if err := lobby.WaitReady(ctx, "match"); err != nil {
		return err
	}
	if err := waitPublishers(ctx, lh.Subscriber("events"), 2); err != nil {
		return err
	}

	// The gateway: players enter through the lobby.
	og := zlink.NewOptions()
	og.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix("gateway").Channel("lobby").Client()
	gh, err := start(og)
	if err != nil {
		return err
	}
	gateway := gh.Mesh("game")
	if err := gateway.WaitReady(ctx, "lobby"); err != nil {
		return err
	}
	enter := func(from, to int) (map[string]int, error) {
		var mu sync.Mutex
		served := map[string]int{}
		var wg sync.WaitGroup
		errs := make(chan error, to-from)
		for i := from; i < to; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				res, err := routemesh.Call(ctx, gateway, "lobby", Enter, EnterReq{Player: fmt.Sprint("p", i)})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				served[res.Server]++
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		close(errs)
		return served, <-errs
	}
	served, err := enter(0, players/2)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "first half: %s\n", format(served))

	// Drain match-a: the next players all go to match-b.
	a := matches["match-a"]
	if err := a.Drain(ctx); err != nil {
		return err
	}
	if err := waitDraining(ctx, lobby, a.RID()); err != nil {
		return err
	}
	served, err = enter(players/2, players)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after draining match-a: %s\n", format(served))
	// Every room that filled was announced; the rest wait for a partner.
	var waiting int64
	for _, ms := range servers {
		waiting += ms.alone.Load()
	}
	want := (int64(players) - waiting) / 2
	for started.Load() < want {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d rooms announced: %w", started.Load(), want, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	fmt.Fprintf(out, "rooms started: %d, players waiting for a partner: %d\n", started.Load(), waiting)
	return nil
}

// waitPublishers waits until the subscriber hears n publishers.
func waitPublishers(ctx context.Context, s *fanout.Subscriber, n int) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		live := 0
		for _, p := range s.Status() {
			if p.State == fanout.StateLive {
				live++
			}
		}
		if live >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// waitDraining waits until the lobby has heard that rid drains.
func waitDraining(ctx context.Context, n *routemesh.Node, rid string) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := n.Status(ctx)
		if err != nil {
			return err
		}
		if p, ok := st.Peer(rid); ok && p.State == routemesh.PeerDraining {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func format(served map[string]int) string {
	var keys []string
	for k := range served {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, served[k]))
	}
	return strings.Join(parts, " ")
}
