// Command room shows the Spot primitives a game room needs, all MeshNodes
// of mesh "game" in one process over the in-memory Location Store:
//
//   - a room Spot asked to start a match asks each of its player Spots,
//     asynchronously and typed (spot.OnReplyOf), whether they are ready;
//   - it leaves its caller's request open (spot.Defer) and answers it from
//     the turn that takes the last player's reply — no polling;
//   - a timer (Context.StartTimer) counts down the match once it started,
//     and a one-shot timer ends it;
//   - the room pushes "match ended" to the gateway, typed and one way
//     (routemesh.Send from the timer's turn, on channel "lobby"): the
//     gateway waits for the push, it does not poll.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

type (
	// Player is a player Spot's state; Status its answer to a room.
	Player struct{ Matches int }
	Status struct {
		Player string
		Ready  bool
	}
	// Start asks a room to start a match with Players; Ready is its
	// answer once every player answered.
	Start struct{ Players []string }
	Ready struct {
		Room    string
		Players []string
	}
	// Ended is the room's push to the gateway when its match ended.
	Ended struct {
		Room  string
		Ticks int
	}
	// Room is a room Spot's state (in memory: rooms are short-lived).
	Room struct {
		waiting map[string]bool // players not answered yet
		ready   []string
		caller  *spot.Later[Ready] // the Start request left open
		ticks   int
		Ended   bool
	}
)

var (
	StatusP = wire.NewPacket[struct{}, Status]("status")
	StartP  = wire.NewPacket[Start, Ready]("start")
	TickP   = wire.NewPacket[string, struct{}]("tick")
	StateP  = wire.NewPacket[struct{}, string]("state")
	EndedP  = wire.NewPacket[Ended, struct{}]("ended")
)

// lobby is the channel the gateway serves: rooms push to it.
const lobby = "lobby"

func playerKind() *spot.Kind[Player] {
	k := spot.NewKind("player", func(string) *Player { return &Player{} })
	spot.On(k, StatusP, func(c *spot.Context, s *Player, _ struct{}) (Status, error) {
		s.Matches++
		return Status{Player: c.ID, Ready: true}, nil
	})
	return k
}

func roomKind() *spot.Kind[Room] {
	k := spot.NewKind("room", func(string) *Room { return &Room{} })
	// The typed asynchronous calls to the players and their replies.
	ask := spot.OnReplyOf(k, StatusP, func(c *spot.Context, s *Room, st Status, err error, tag any) {
		player := tag.(string)
		if s.waiting == nil || !s.waiting[player] {
			return
		}
		delete(s.waiting, player)
		if err == nil && st.Ready {
			s.ready = append(s.ready, player)
		}
		if len(s.waiting) > 0 || s.caller == nil {
			return
		}
		sort.Strings(s.ready)
		_ = s.caller.Reply(c, Ready{Room: c.ID, Players: s.ready}) // the deferred answer
		s.caller = nil
		// The match runs for three ticks of 10 ms, then a one-shot ends it.
		_ = spot.StartTimerOf(c, "tick", 10*time.Millisecond, 10*time.Millisecond, TickP, "tick")
		_ = spot.StartTimerOf(c, "end", 35*time.Millisecond, 0, TickP, "end")
	})
	spot.On(k, StartP, func(c *spot.Context, s *Room, r Start) (Ready, error) {
		if s.caller != nil {
			return Ready{}, fmt.Errorf("room %s is starting already", c.ID)
		}
		later, err := spot.Defer(c, StartP)
		if err != nil {
			return Ready{}, err
		}
		s.caller, s.waiting, s.ready = later, map[string]bool{}, nil
		for _, p := range r.Players {
			s.waiting[p] = true
			if err := ask.CallSpot(c, "player", p, struct{}{}, 2*time.Second, p); err != nil {
				return Ready{}, err
			}
		}
		return Ready{}, nil // ignored: the request is left open
	})
	spot.OnSend(k, TickP, func(c *spot.Context, s *Room, what string) {
		switch what {
		case "tick":
			s.ticks++
		case "end":
			c.CancelTimer("tick")
			s.Ended = true
			// A typed one-way push from the turn (c carries the chain); it
			// ends once queued for the gateway, or refused.
			if err := routemesh.Send(c, c.Node, lobby, EndedP, Ended{Room: c.ID, Ticks: s.ticks}); err != nil {
				l := c.Node.Logger()
				l.Warn().Err(err).Str("room", c.ID).Msg("room: the push to the lobby failed")
			}
		}
	})
	spot.On(k, StateP, func(_ *spot.Context, s *Room, _ struct{}) (string, error) {
		if s.Ended {
			return fmt.Sprintf("ended after %d ticks", s.ticks), nil
		}
		return "running", nil
	})
	return k
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "room:", err)
		os.Exit(1)
	}
}

// run starts two Object Servers hosting rooms and players and a gateway
// (an Object Client), starts a match of five players and waits for it to
// end.
func run(ctx context.Context, out io.Writer) error {
	store := location.NewMemory()
	defer store.Close()
	var hosts []*zlink.Host
	defer func() {
		for _, h := range hosts {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = h.Stop(sctx)
			cancel()
		}
	}()
	ended := make(chan Ended, 1)
	start := func(prefix string, role routemesh.ObjectRole, kinds ...spot.Registration) (*routemesh.Node, error) {
		o := zlink.NewOptions().SetLocationStore(store)
		b := o.AddRouteMesh("game").SetRoutingIDPrefix(prefix).SetObjectRole(role)
		if role == routemesh.ObjectServer {
			b.Channel(lobby).Client()
		} else { // the gateway: rooms push to it
			routemesh.OnSend(b.Channel(lobby).Server(), EndedP, func(_ *routemesh.Context, e Ended) {
				select {
				case ended <- e:
				default:
				}
			})
		}
		spot.Enable(b, kinds...)
		h, err := zlink.Start(ctx, o)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
		return h.Mesh("game"), nil
	}
	var nodes []*routemesh.Node
	for _, p := range []string{"world-a", "world-b"} {
		n, err := start(p, routemesh.ObjectServer, playerKind(), roomKind())
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	gw, err := start("gateway", routemesh.ObjectClient)
	if err != nil {
		return err
	}
	for _, n := range append(nodes, gw) {
		if err := n.WaitPeers(ctx, len(nodes)); err != nil {
			return err
		}
		if err := spot.WaitReady(ctx, n); err != nil {
			return err
		}
	}
	players := []string{"p1", "p2", "p3", "p4", "p5"}
	ready, err := spot.Call(ctx, gw, "room", "r1", StartP, Start{Players: players})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "room %s ready with %v\n", ready.Room, ready.Players)
	// The gateway waits for the room's push: no polling.
	select {
	case e := <-ended:
		fmt.Fprintf(out, "room %s ended after %d ticks\n", e.Room, e.Ticks)
	case <-ctx.Done():
		return ctx.Err()
	}
	state, err := spot.Call(ctx, gw, "room", "r1", StateP, struct{}{})
	if err != nil {
		return err
	}
	if state == "running" {
		return fmt.Errorf("room r1 pushed its end but says %q", state)
	}
	return nil
}
