package spot_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/faults"
	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/supervisor"
	"github.com/zlink-go/zlink/wire"
)

// A persistent kind: a counter whose state is saved.
type wallet struct {
	Coins int64
	Seq   int64
}

var (
	payP     = wire.NewPacket[int64, int64]("pay")
	balanceP = wire.NewPacket[struct{}, int64]("balance")
)

func walletKind(p spot.Persistence, idle time.Duration) *spot.Kind[wallet] {
	k := spot.NewKind("wallet", func(string) *wallet { return &wallet{} })
	spot.On(k, payP, func(_ *spot.Context, s *wallet, n int64) (int64, error) { s.Coins += n; return s.Coins, nil })
	spot.On(k, balanceP, func(_ *spot.Context, s *wallet, _ struct{}) (int64, error) { return s.Coins, nil })
	k.Persist(p)
	if idle > 0 {
		k.SetIdleTimeout(idle)
	}
	return k
}

func walletNodes(t *testing.T, store location.Store, kind func() spot.Registration, n int) ([]*zlink.Host, []*routemesh.Node, *routemesh.Node) {
	t.Helper()
	var hosts []*zlink.Host
	var servers []*routemesh.Node
	for i := range n {
		h, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{kind()}})
		hosts, servers = append(hosts, h), append(servers, s)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	return hosts, servers, cl
}

// The state outlives idle deactivation and the owner's clean stop.
func TestPersist_StateSurvivesDeactivationAndStop(t *testing.T) {
	store := location.NewMemory()
	hosts, servers, cl := walletNodes(t, store, func() spot.Registration {
		return walletKind(spot.Persistence{Version: 1}, 100*time.Millisecond)
	}, 2)
	ctx := ctxT(t, 20*time.Second)
	_, res, err := spot.CallRaw(ctx, cl, "wallet", "w1", payP.Name(), mustEnc(t, payP, 7))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "idle deactivation", 5*time.Second, func() bool {
		for _, s := range servers {
			if st, _ := spot.StatsOf(s); st.Kinds[0].Deactivations > 0 {
				return true
			}
		}
		return false
	})
	if v, err := spot.Call(ctx, cl, "wallet", "w1", payP, 3); err != nil || v != 10 {
		t.Fatalf("after reactivation: %d, %v; want 10", v, err)
	}
	// Stop the owner: the last turn saves, the next owner restores.
	for i, s := range servers {
		if s.RID() == res.Owner {
			stop(t, hosts[i])
		}
	}
	waitFor(t, "the client sees the owner gone", 5*time.Second, func() bool {
		ready, _ := cl.PeerReady(res.Owner)
		return !ready
	})
	v, res2, err := spot.CallRaw(ctx, cl, "wallet", "w1", balanceP.Name(), mustEnc(t, balanceP, struct{}{}))
	if err != nil || res2.Owner == res.Owner {
		t.Fatalf("after the owner stopped: %v, owner %s", err, res2.Owner)
	}
	if got, _ := balanceP.DecodeReply(v); got != 10 {
		t.Fatalf("restored balance %d, want 10", got)
	}
}

// A crash loses at most the work since the last checkpoint; with
// ReplyAfterWrite, nothing acknowledged.
func TestPersist_CrashLosesAtMostSinceLastCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    spot.Persistence
		want int64
	}{
		{"every 5", spot.Persistence{Version: 1, Every: 5}, 10},
		{"reply after write", spot.Persistence{Version: 1, ReplyAfterWrite: true}, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := location.NewMemory()
			hosts, servers, cl := walletNodes(t, store, func() spot.Registration { return walletKind(tc.p, 0) }, 2)
			ctx := ctxT(t, 30*time.Second)
			var owner string
			for range 12 {
				_, res, err := spot.CallRaw(ctx, cl, "wallet", "crash", payP.Name(), mustEnc(t, payP, 1))
				if err != nil {
					t.Fatal(err)
				}
				owner = res.Owner
			}
			for i, s := range servers {
				if s.RID() == owner {
					crash(t, hosts[i], s)
				}
			}
			var got int64
			waitFor(t, "the Spot answers from the other server", 10*time.Second, func() bool {
				out, res, err := spot.CallRaw(ctx, cl, "wallet", "crash", balanceP.Name(), mustEnc(t, balanceP, struct{}{}))
				if err != nil || res.Owner == owner {
					return false
				}
				got, _ = balanceP.DecodeReply(out)
				return true
			})
			if got != tc.want {
				t.Fatalf("restored %d after a crash, want %d (the last checkpoint)", got, tc.want)
			}
		})
	}
}

// A snapshot of a newer format is refused clearly; an older one goes
// through OnUpgrade.
func TestPersist_SnapshotVersions(t *testing.T) {
	store := location.NewMemory()
	ctx := ctxT(t, 20*time.Second)
	own := func(id string, epoch uint64, version uint32, data string) {
		t.Helper()
		sp := location.Ownership{Mesh: mesh, Kind: "wallet", ID: id}
		o := sp
		o.OwnerRID, o.OwnerGeneration, o.Epoch = "gone", 1, epoch
		if _, err := store.ClaimSpot(ctx, sp, o); err != nil {
			t.Fatal(err)
		}
		if err := store.PutSpotState(ctx, o, location.SpotState{Data: []byte(data), Version: version, Epoch: epoch}); err != nil {
			t.Fatal(err)
		}
		if err := store.ReleaseSpot(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	own("newer", 4, 9, "\x80")
	own("older", 2, 1, "old:25")
	_, _, cl := walletNodes(t, store, func() spot.Registration {
		return walletKind(spot.Persistence{Version: 2}, 0).OnUpgrade(func(v uint32, data []byte) (*wallet, error) {
			var n int64
			if _, err := fmt.Sscanf(string(data), "old:%d", &n); err != nil {
				return nil, err
			}
			return &wallet{Coins: n}, nil
		})
	}, 1)
	_, err := spot.Call(ctx, cl, "wallet", "newer", balanceP, struct{}{})
	if !errors.Is(err, spot.ErrHandler) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("a newer snapshot: %v, want ErrHandler naming the version", err)
	}
	v, res, err := spot.CallRaw(ctx, cl, "wallet", "older", balanceP.Name(), mustEnc(t, balanceP, struct{}{}))
	if got, _ := balanceP.DecodeReply(v); err != nil || got != 25 || res.Epoch <= 2 {
		t.Fatalf("an upgraded snapshot: %d at epoch %d, %v; want 25 above epoch 2", got, res.Epoch, err)
	}
}

func mustEnc[Req, Resp any](t *testing.T, p wire.Packet[Req, Resp], v Req) []byte {
	t.Helper()
	b, err := p.EncodeRequest(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crash makes n fail for good the way a process crash looks to the store:
// its mesh actor fails past its restart intensity (no release, no lease
// renewal).
func crash(t *testing.T, h *zlink.Host, n *routemesh.Node) {
	t.Helper()
	path := meshbridge.MeshActorPath(n)
	for i := range 4 {
		waitFor(t, "mesh actor running", 5*time.Second, func() bool {
			m, ok := find(h.Tree(), path)
			return ok && m.State == supervisor.Running
		})
		if n.State() == routemesh.NodeFailed {
			return
		}
		if err := faults.InjectPanic(h, path, fmt.Sprintf("crash %d", i)); err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			waitFor(t, "restart", 5*time.Second, func() bool {
				m, ok := find(h.Tree(), path)
				return ok && m.LastFailure != nil && m.LastFailure.Reason == fmt.Sprintf("crash %d", i)
			})
		}
	}
	waitFor(t, "node failed", 5*time.Second, func() bool { return n.State() == routemesh.NodeFailed })
}
