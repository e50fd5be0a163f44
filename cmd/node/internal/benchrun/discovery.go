package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

func init() {
	register(Bench{
		Name:  "discovery",
		About: "automatic topology over Redis: start to full mesh for N nodes, and weight-change propagation to every peer",
		Run:   runDiscovery,
	})
}

func runDiscovery(ctx context.Context, w io.Writer, quick bool) error {
	sizes := []int{2, 8, 32}
	if quick {
		sizes = []int{2, 8}
	}
	open, stop, err := benchStore(ctx, w)
	if err != nil {
		return err
	}
	defer stop()
	for _, n := range sizes {
		store, err := open()
		if err != nil {
			return err
		}
		d, hosts, err := fullMesh(ctx, store, n)
		if err == nil {
			fmt.Fprintf(w, "discovery nodes=%d start_to_full_mesh=%v\n", n, d.Round(time.Millisecond))
			if n == 8 || (quick && n == sizes[len(sizes)-1]) {
				err = weightPropagation(ctx, w, hosts)
			}
		}
		for _, h := range hosts {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = h.Stop(sctx)
			cancel()
		}
		_ = store.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// fullMesh starts n automatic nodes (node 0 serves channel "bench", the
// others are its Clients) and returns the time until every node has n-1
// ready peers.
func fullMesh(ctx context.Context, store location.Store, n int) (time.Duration, []*zlink.Host, error) {
	var hosts []*zlink.Host
	start := time.Now()
	for i := 0; i < n; i++ {
		o := zlink.NewOptions().SetLocationStore(store)
		b := o.AddRouteMesh("bench").SetRoutingIDPrefix("b").
			ConfigureDiscovery(routemesh.DiscoveryConfig{Poll: 200 * time.Millisecond})
		if i == 0 {
			b.Channel("bench").Server().SetWeight(100).HandleRequest("ping", func(*routemesh.Context, []byte) ([]byte, error) { return nil, nil })
		} else {
			b.Channel("bench").Client()
		}
		h, err := zlink.Start(ctx, o)
		if err != nil {
			return 0, hosts, err
		}
		hosts = append(hosts, h)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok := true
		for _, h := range hosts {
			st, err := h.Mesh("bench").Status(ctx)
			if err != nil || st.CountPeers(routemesh.PeerReady) != n-1 {
				ok = false
				break
			}
		}
		if ok {
			return time.Since(start), hosts, nil
		}
		if time.Now().After(deadline) {
			return 0, hosts, fmt.Errorf("discovery: %d nodes not fully meshed within 60s", n)
		}
		select {
		case <-ctx.Done():
			return 0, hosts, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// weightPropagation toggles node 0's weight between 0 and 100 twenty times
// and measures until every other node's selection reflects it.
func weightPropagation(ctx context.Context, w io.Writer, hosts []*zlink.Host) error {
	server := hosts[0].Mesh("bench")
	var lat []time.Duration
	for i := 0; i < 20; i++ {
		weight := 0
		if i%2 == 1 {
			weight = 100
		}
		start := time.Now()
		if err := server.SetWeight(ctx, "bench", weight); err != nil {
			return err
		}
		for _, h := range hosts[1:] {
			n := h.Mesh("bench")
			for {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				_, err := n.Call(cctx, "bench", "ping", nil)
				cancel()
				if (weight == 0) == errors.Is(err, zlink.ErrNoTarget) {
					break
				}
				if time.Since(start) > 30*time.Second {
					return fmt.Errorf("discovery: weight %d did not reach %s within 30s", weight, n.RID())
				}
			}
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))].Round(time.Microsecond) }
	fmt.Fprintf(w, "discovery weight_propagation nodes=%d changes=%d p50=%v p99=%v\n", len(hosts), len(lat), p(0.5), p(0.99))
	return nil
}

// benchStore starts a throwaway redis-server on a free port and returns a
// constructor of stores on it; without redis-server it falls back to the
// in-memory store and says so.
func benchStore(ctx context.Context, w io.Writer) (func() (location.Store, error), func(), error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		fmt.Fprintln(w, "discovery: redis-server not installed; using the in-memory Location Store (numbers are not Redis numbers)")
		return func() (location.Store, error) { return location.NewMemory(), nil }, func() {}, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	open := func() (location.Store, error) {
		return location.NewRedis(ctx, location.RedisConfig{Addr: addr, Prefix: "bench" + strconv.FormatInt(time.Now().UnixNano(), 36)})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := open()
		if err == nil {
			_ = s.Close()
			return open, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("discovery: redis-server on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
