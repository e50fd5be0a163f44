// Command embedded is a game server process that embeds ZLink and serves
// its admin API, so that `zlink-node status`, `tree`, `weight`, `drain`,
// `spot-owner` … and the dashboard at /ui work against it as against
// `zlink-node run`:
//
//   - one MeshNode of mesh "game" (automatic topology, RID prefix "game"),
//     an Object Server hosting the persistent Spot kind "room" (the players
//     in a room, saved to the Location Store);
//   - a Server of channel "match": request "join" with payload
//     "ROOM PLAYER" seats the player in the room's Spot and answers
//     "room=ROOM players=N";
//   - the admin API (package admin) on --admin, with an optional bearer
//     token (--admin-token-file) for the endpoints that change the node.
//
// The Location Store is in memory by default (one process, nothing to
// install) or Redis with --store redis://HOST:PORT. When ready it prints
// the ready line of `zlink-node run`, then serves until SIGINT or
// SIGTERM: it drains (rooms are saved), then stops.
//
//	go run ./examples/embedded --admin 127.0.0.1:9100 &
//	zlink-node status --admin 127.0.0.1:9100
//	zlink-node request --location redis://… --mesh game --channel match --packet join --data "room-1 alice"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/admin"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// maxPlayers bounds one room.
const maxPlayers = 16

// Room is the state of one room Spot (persistent).
type Room struct{ Players []string }

// roomKind is the persistent Spot kind "room": "join" PLAYER seats a
// player (again: no change) and answers the count; "players" lists them.
func roomKind() *spot.Kind[Room] {
	return spot.NewKind("room", func(string) *Room { return &Room{} }).
		Persist(spot.Persistence{Version: 1, Every: 1}).
		OnRaw("join", func(_ *spot.Context, r *Room, p []byte) ([]byte, error) {
			player := string(p)
			if player == "" || len(player) > 64 {
				return nil, errors.New("join: want a player name of 1..64 bytes")
			}
			if !slices.Contains(r.Players, player) {
				if len(r.Players) >= maxPlayers {
					return nil, fmt.Errorf("join: the room is full (%d players)", maxPlayers)
				}
				r.Players = append(r.Players, player)
			}
			return fmt.Appendf(nil, "%d", len(r.Players)), nil
		}).
		OnRaw("players", func(_ *spot.Context, r *Room, _ []byte) ([]byte, error) {
			return []byte(strings.Join(r.Players, ",")), nil
		})
}

// config is what the flags set.
type config struct {
	store, admin, prefix, tokenFile, listen, logLevel string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.store, "store", "memory", "Location Store: memory or redis://HOST:PORT[/DB]")
	flag.StringVar(&cfg.admin, "admin", "127.0.0.1:0", "admin HTTP address")
	flag.StringVar(&cfg.prefix, "admin-prefix", "", "serve the admin API under this path (e.g. /zlink) of the process's own mux")
	flag.StringVar(&cfg.tokenFile, "admin-token-file", "", "admin bearer token file (required when --admin is not loopback)")
	flag.StringVar(&cfg.listen, "listen", "tcp://127.0.0.1:0", "the MeshNode's ROUTER endpoint")
	flag.StringVar(&cfg.logLevel, "log-level", "warn", "log level (logs go to stderr)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "embedded:", err)
		os.Exit(1)
	}
}

// run starts the process, prints the ready line on out and serves until
// ctx ends; then it drains and stops.
func run(ctx context.Context, cfg config, out, logOut io.Writer) error {
	lvl, err := zerolog.ParseLevel(cfg.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := zerolog.New(logOut).Level(lvl).With().Timestamp().Logger()
	var token []byte
	if cfg.tokenFile != "" {
		raw, err := os.ReadFile(cfg.tokenFile)
		if err != nil {
			return err
		}
		token = []byte(strings.TrimSpace(string(raw)))
	}
	// Everything the admin handler needs to know before it serves: a
	// reachable address needs a token.
	aopts := admin.Options{Token: token, Logger: log, Prefix: cfg.prefix}
	if err := admin.CheckExposure(cfg.admin, aopts); err != nil {
		return err
	}
	api, err := admin.New(aopts)
	if err != nil {
		return err
	}

	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := openStore(startCtx, cfg.store, log)
	if err != nil {
		return err
	}
	defer store.Close()

	o := zlink.NewOptions().SetLogger(log).SetLocationStore(store)
	m := o.AddRouteMesh("game").Listen(cfg.listen).SetRoutingIDPrefix("game").SetObjectRole(routemesh.ObjectServer)
	spot.Enable(m, roomKind())
	var node *routemesh.Node // written before ready is closed; handlers wait for it
	ready := make(chan struct{})
	m.Channel("match").Server().HandleRequest("join", func(c *routemesh.Context, p []byte) ([]byte, error) {
		select {
		case <-ready:
		case <-c.Done():
			return nil, c.Err()
		}
		room, player, ok := strings.Cut(string(p), " ")
		if !ok || room == "" {
			return nil, errors.New(`join: want payload "ROOM PLAYER"`)
		}
		n, _, err := spot.CallRaw(c, node, "room", room, "join", []byte(player))
		if err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, "room=%s players=%s", room, n), nil
	})

	// The admin API serves from before the start: /healthz says starting.
	ln, err := net.Listen("tcp", cfg.admin)
	if err != nil {
		return err
	}
	// The process's own mux: the game's routes, and the admin API under
	// its prefix (or at the root without one).
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "a game server; its admin API is at %s/\n", cfg.prefix)
	})
	mux.Handle(cfg.prefix+"/", api)
	srv := admin.NewServer(mux)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("admin server failed")
		}
	}()

	host, err := zlink.Start(startCtx, o)
	if err != nil {
		return err
	}
	node = host.Mesh("game")
	close(ready)
	if err := spot.WaitReady(startCtx, node); err != nil {
		_ = stopHost(host, log)
		return err
	}
	api.SetHost(host)
	// The ready line of `zlink-node run`; admin= is what the admin
	// commands take as --admin (the prefix included).
	fmt.Fprintf(out, "ready mesh=%s rid=%s endpoint=%s admin=%s%s\n", node.Mesh(), node.RID(), node.Endpoint(), ln.Addr(), cfg.prefix)

	<-ctx.Done()
	api.MarkStopping()
	return stopHost(host, log)
}

// openStore opens the Location Store: in memory, or Redis with the
// process logger (corrupt records are logged once per key).
func openStore(ctx context.Context, url string, log zerolog.Logger) (location.Store, error) {
	if url == "memory" {
		return location.NewMemory(), nil
	}
	rc, err := location.ParseRedisURL(url)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	rc.Logger = log
	return location.NewRedis(ctx, rc)
}

// stopHost drains (the rooms are saved and released), then stops.
func stopHost(h *zlink.Host, log zerolog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range h.Meshes() {
		if err := n.Drain(ctx); err != nil {
			log.Warn().Err(err).Str("mesh", n.Mesh()).Msg("drain before stop did not finish")
		}
	}
	return h.Stop(ctx)
}
