package benchrun

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// `zlink-node bench spots-redis`: first-call activations of persistent
// Spots against one real redis-server — two Object Servers in this
// process, each with its own Redis client, callers on both; every call
// goes to a new ID (placement, the claim with the state read, spawn, first
// turn). The redis-server's INFO commandstats before and after give the store
// commands per activation.
func init() {
	register(Bench{
		Name: "spots-redis",
		About: "first-call activations/s of persistent Spots on two Object Servers against one real redis-server, " +
			"and the Redis commands per activation (INFO commandstats)",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			_, err := runSpotsRedis(ctx, w, spotsRedisPlanFor(quick))
			return err
		},
	})
}

// goalSpotRedisActivations is the goal: first-call activations per second
// against one redis-server.
const goalSpotRedisActivations = 10_000

const spotsRedisKind = "pbench"

// spotsRedisPlan is the size of the run.
type spotsRedisPlan struct {
	servers     int // Object Servers (this process)
	activations int // new IDs per round
	callers     int // calling goroutines per server node
	rounds      int // rounds (median reported)
}

func spotsRedisPlanFor(quick bool) spotsRedisPlan {
	if quick {
		return spotsRedisPlan{servers: 2, activations: 1000, callers: 32, rounds: 1}
	}
	return spotsRedisPlan{servers: 2, activations: 10_000, callers: 64, rounds: 3}
}

// spotsRedisResult is what runSpotsRedis measured.
type spotsRedisResult struct {
	Rate        float64            // activations/s, median of the rounds
	PerActivate float64            // Redis commands per activation (client commands and those scripts ran)
	RoundTrips  float64            // client commands per activation (EVALSHA, EVALSHA_RO: every step is a script)
	Calls       map[string]float64 // per command, per activation (last round)
	CPUus       float64            // this process's CPU per activation (last round)
	RedisCPUus  float64            // the redis-server's CPU per activation (last round)
}

// spotsRedisState is the persistent kind's state.
type spotsRedisState struct {
	N int64 `msgpack:"n"`
}

func spotsRedisKindReg() *spot.Kind[spotsRedisState] {
	return spot.NewKind(spotsRedisKind, func(string) *spotsRedisState { return &spotsRedisState{} }).
		OnRaw(spotsPacket, func(_ *spot.Context, s *spotsRedisState, p []byte) ([]byte, error) {
			s.N++
			return p, nil
		}).
		Persist(spot.Persistence{Version: 1}). // saved at deactivation (after the bench)
		SetIdleTimeout(spotsIdle)
}

func runSpotsRedis(ctx context.Context, w io.Writer, plan spotsRedisPlan) (spotsRedisResult, error) {
	var res spotsRedisResult
	addr, stopRedis, err := startScaleRedis()
	if err != nil {
		return res, fmt.Errorf("spots-redis: %w", err)
	}
	defer stopRedis()
	var (
		hosts []*zlink.Host
		nodes []*routemesh.Node
	)
	defer func() {
		var wg sync.WaitGroup
		for _, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = h.Stop(sctx)
			}()
		}
		wg.Wait()
	}()
	for i := range plan.servers {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		store, err := location.NewRedis(sctx, location.RedisConfig{Addr: addr, Prefix: "spots", PollInterval: 200 * time.Millisecond})
		if err != nil {
			cancel()
			return res, fmt.Errorf("spots-redis: %w", err)
		}
		o := zlink.NewOptions().SetLocationStore(store).SetLogger(zerolog.Nop())
		b := o.AddRouteMesh(spotsMesh).SetRoutingIDPrefix(spotsPrefix(i)).SetObjectRole(routemesh.ObjectServer).
			ConfigureDiscovery(spotsSteady.discovery)
		spot.Enable(b, spotsRedisKindReg())
		h, err := zlink.Start(sctx, o)
		cancel()
		if err != nil {
			_ = store.Close()
			return res, fmt.Errorf("spots-redis: start node %d: %w", i, err)
		}
		hosts = append(hosts, h)
		nodes = append(nodes, h.Mesh(spotsMesh))
	}
	if err := spotsRedisReady(ctx, nodes); err != nil {
		return res, err
	}
	fmt.Fprintf(w, "setup: %d Object Servers in one process (a Redis client each), one redis-server %s (no persistence), "+
		"persistent kind %s (state read with the claim, saved at deactivation), payload %d B, GOMAXPROCS=%d\n",
		plan.servers, addr, spotsRedisKind, spotsPayloadSize, runtime.GOMAXPROCS(0))
	var rates []float64
	stopProfile := envProfile("ZLINK_SPOTS_REDIS_PROFILE")
	defer stopProfile()
	for r := range plan.rounds {
		before, err := locationtest.ReadLoad(addr)
		if err != nil {
			return res, fmt.Errorf("spots-redis: %w", err)
		}
		cpu0 := cmpProcessCPU()
		el, _, err := spotsActivateKind(ctx, nodes, plan.callers, plan.activations, spotsRedisKind, fmt.Sprintf("first%d", r))
		if err != nil {
			return res, fmt.Errorf("spots-redis: activations: %w", err)
		}
		cpu := cmpProcessCPU() - cpu0
		after, err := locationtest.ReadLoad(addr)
		if err != nil {
			return res, fmt.Errorf("spots-redis: %w", err)
		}
		d := after.Sub(before)
		if d.Calls["info"] > 0 {
			d.Calls["info"]-- // the bench's INFO that read "before" (the one that read "after" does not count itself)
		}
		rates = append(rates, float64(plan.activations)/el.Seconds())
		res.Calls = map[string]float64{}
		total, trips := 0.0, 0.0
		for k, v := range d.Calls {
			if v > 0 {
				res.Calls[k] = float64(v) / float64(plan.activations)
				total += res.Calls[k]
				if strings.HasPrefix(k, "eval") {
					trips += res.Calls[k]
				}
			}
		}
		res.PerActivate, res.RoundTrips = total, trips
		res.CPUus = float64(cpu.Microseconds()) / float64(plan.activations)
		res.RedisCPUus = float64(d.CPUMicro) / float64(plan.activations)
		fmt.Fprintf(w, "activations round=%d n=%d callers=%d %9.0f activations/s  cpu/activation %.0fµs (nodes and callers) redis %.0fµs  redis round trips/activation %.2f, commands %.2f (%s)\n",
			r+1, plan.activations, plan.callers*len(nodes), rates[r], res.CPUus, res.RedisCPUus, trips, total, spotsRedisCalls(res.Calls))
	}
	res.Rate = median(rates)
	fmt.Fprintf(w, "activations persistent first-call store=redis n=%d %9.0f activations/s (median of rounds=%d)  redis round trips/activation %.2f "+
		"(every store step is one script: EVALSHA/EVALSHA_RO), commands %.2f counting those the scripts ran: %s\n",
		plan.activations, res.Rate, plan.rounds, res.RoundTrips, res.PerActivate, spotsRedisCalls(res.Calls))
	fmt.Fprintf(w, "goal first-call activations against one redis-server >= %d/s: %.0f/s %s\n",
		goalSpotRedisActivations, res.Rate, spotsVerdict(res.Rate >= goalSpotRedisActivations))
	return res, nil
}

// spotsRedisCalls lists the commands per activation, most first (the
// commands a script ran count beside the EVALSHA that ran it).
func spotsRedisCalls(calls map[string]float64) string {
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if calls[a] != calls[b] {
			if calls[a] > calls[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if calls[k] >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s=%.2f", k, calls[k]))
		}
	}
	return strings.Join(parts, " ")
}

// spotsRedisReady waits until every node places new Spots on every Object
// Server (as startSpotsCluster does for the in-memory bench).
func spotsRedisReady(ctx context.Context, nodes []*routemesh.Node) error {
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.WaitPeers(wctx, len(nodes)-1); err != nil {
			return fmt.Errorf("spots-redis: %s peers: %w", n.RID(), err)
		}
		if err := spot.WaitReady(wctx, n); err != nil {
			return fmt.Errorf("spots-redis: %s: %w", n.RID(), err)
		}
	}
	payload := make([]byte, spotsPayloadSize)
	for _, n := range nodes {
		seen := map[string]bool{}
		for k := 0; len(seen) < len(nodes); k++ {
			out, res, err := spot.CallRaw(wctx, n, spotsRedisKind, spotID("probe-"+n.RID(), k), spotsPacket, payload)
			if err != nil {
				return fmt.Errorf("spots-redis: placement probe from %s: %w", n.RID(), err)
			}
			if len(out) != len(payload) {
				return errEchoMismatch
			}
			seen[res.Owner] = true
			if k%16 == 15 {
				if err := sleepCtx(wctx, 20*time.Millisecond); err != nil {
					return fmt.Errorf("spots-redis: %s places new Spots on %d of %d Object Servers: %w", n.RID(), len(seen), len(nodes), err)
				}
			}
		}
	}
	return nil
}

// spotsActivateKind is spotsActivate for a kind of the caller's choice.
func spotsActivateKind(ctx context.Context, nodes []*routemesh.Node, perNode, count int, kind, prefix string) (time.Duration, []string, error) {
	owners := make([]string, count)
	payload := make([]byte, spotsPayloadSize)
	el, err := spotsParallel(ctx, nodes, perNode, count, func(ctx context.Context, n *routemesh.Node, i int) error {
		out, res, err := spot.CallRaw(ctx, n, kind, spotID(prefix, i), spotsPacket, payload)
		owners[i] = res.Owner
		if err == nil && len(out) != len(payload) {
			err = errEchoMismatch
		}
		return err
	})
	return el, owners, err
}
