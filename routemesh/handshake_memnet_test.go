package routemesh

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
	"github.com/zlink-go/zlink/wire"
)

// The handshake under a lossy network: whatever happens to its frames, each
// attempt ends Ready or with a clean timeout (the pipe closed on both sides,
// the intent dialing again), never a pipe stuck in the handshake.

var hsLive = LivenessConfig{Interval: 20 * time.Millisecond, MaxGap: 5, LastHeard: 400 * time.Millisecond}

const hsTimeout = 200 * time.Millisecond

// frameType decodes the type of a raw frame (0 if it does not decode).
func frameType(b []byte) wire.FrameType {
	f, err := wire.DecodeFrame(b)
	if err != nil {
		return 0
	}
	return f.Type
}

// hsPair starts listener "m" and a dialer called dialer (expecting "m"),
// with the filter installed before the first frame.
func hsPair(t *testing.T, nw *memnet.Network, dialer string) (d, l *memNode) {
	t.Helper()
	l = startMem(t, nw, memSpec{rid: "m", live: hsLive, hsTimeout: hsTimeout})
	d = startMem(t, nw, memSpec{rid: dialer, live: hsLive, hsTimeout: hsTimeout, peer: l.Endpoint(), expect: "m"})
	return d, l
}

// arbiters names both pipe layouts: the dialer arbitrates ("a" < "m"), or
// the listener does ("m" < "z").
var arbiters = []struct{ name, dialer string }{
	{"dialer-arbiter", "a"},
	{"listener-arbiter", "z"},
}

func TestHandshakeMem_LostOrReorderedFrameEndsReadyOrCleanTimeout(t *testing.T) {
	faults := []struct {
		name     string
		fromDial bool // the frame is the dialer's (else the listener's)
		typ      wire.FrameType
		verdict  memnet.Verdict
		times    int
	}{
		{"drop-hello", true, wire.FrameHello, memnet.Drop, 1},
		{"drop-welcome", false, wire.FrameWelcome, memnet.Drop, 1},
		{"drop-auth", true, wire.FrameAuth, memnet.Drop, 1},
		{"drop-auth-3-times", true, wire.FrameAuth, memnet.Drop, 3},
		{"drop-first-batch-of-listener", false, wire.FrameBatch, memnet.Drop, 1},
		{"drop-first-batch-of-dialer", true, wire.FrameBatch, memnet.Drop, 1},
		{"reorder-welcome", false, wire.FrameWelcome, memnet.Hold, 1},
		{"reorder-first-batch-of-listener", false, wire.FrameBatch, memnet.Hold, 1},
		{"reorder-first-batch-of-dialer", true, wire.FrameBatch, memnet.Hold, 1},
	}
	for _, ar := range arbiters {
		for _, f := range faults {
			t.Run(ar.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				nw := memnet.New(5)
				from := "m"
				if f.fromDial {
					from = ar.dialer
				}
				var hits atomic.Int32
				nw.SetFilter(func(p memnet.Packet) memnet.Verdict {
					if p.From == from && int(hits.Load()) < f.times && frameType(p.Frame) == f.typ {
						hits.Add(1)
						return f.verdict
					}
					return memnet.Deliver
				})
				d, l := hsPair(t, nw, ar.dialer)
				// A batch fault may hit after both sides are ready (the first
				// heartbeat can follow readiness): wait for it too.
				waitUntil(t, "one ready connection, no pipe left in a handshake, the fault done", 10*time.Second,
					func() bool { return int(hits.Load()) >= f.times && settled(nw, d, l) })
				if got := int(hits.Load()); got != f.times {
					t.Fatalf("the fault hit %d frames, want %d", got, f.times)
				}
				if !d.callOK(t, "m") || !l.callOK(t, ar.dialer) {
					t.Fatal("calls fail on the connection that survived the fault")
				}
			})
		}
	}
}

// Seeded random loss and reorder of the first frames in both directions
// (the handshake and the first heartbeats), with delay and jitter: every
// seed must end in one ready connection with nothing stuck. (A lost
// request is the caller's timeout, not the handshake's business: the
// faults stop before the calls that check the connection.)
func TestHandshakeMem_SeededChaosConverges(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		for _, ar := range arbiters {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, ar.name), func(t *testing.T) {
				t.Parallel()
				nw := memnet.New(seed)
				// One stream and one fault budget per direction, so the faults
				// of a direction depend on its own frames only. The filter runs
				// under the network's lock: the maps need no other.
				rngs := map[string]*rand.Rand{}
				budget := map[string]int{}
				var faulted atomic.Int32
				var calm atomic.Bool // set once settled: the calls below are not the subject
				nw.SetFilter(func(p memnet.Packet) memnet.Verdict {
					if calm.Load() || budget[p.From] >= 3 || p.Seq > 8 {
						return memnet.Deliver
					}
					r := rngs[p.From]
					if r == nil {
						r = rand.New(rand.NewPCG(seed, uint64(len(p.From))+uint64(p.From[0])))
						rngs[p.From] = r
					}
					switch x := r.Float64(); {
					case x < 0.25:
						budget[p.From]++
						faulted.Add(1)
						return memnet.Drop
					case x < 0.5:
						budget[p.From]++
						faulted.Add(1)
						return memnet.Hold
					}
					return memnet.Deliver
				})
				for _, dir := range [][2]string{{ar.dialer, "m"}, {"m", ar.dialer}} {
					nw.SetFaults(dir[0], dir[1], memnet.Faults{Delay: time.Millisecond, Jitter: 10 * time.Millisecond, HoldMax: 30 * time.Millisecond})
				}
				d, l := hsPair(t, nw, ar.dialer)
				waitUntil(t, fmt.Sprintf("seed %d: one ready connection, no pipe left in a handshake", seed), 15*time.Second,
					func() bool { return settled(nw, d, l) })
				calm.Store(true)
				if faulted.Load() == 0 {
					t.Fatalf("seed %d injected no fault", seed)
				}
				if !d.callOK(t, "m") || !l.callOK(t, ar.dialer) {
					t.Fatalf("seed %d: calls fail after convergence", seed)
				}
			})
		}
	}
}

// While every Auth is lost, no attempt can finish: each one must end with a
// handshake timeout on both sides and leave nothing behind, and once the
// network recovers the next attempt succeeds.
func TestHandshakeMem_PermanentLossTimesOutCleanly(t *testing.T) {
	for _, ar := range arbiters {
		t.Run(ar.name, func(t *testing.T) {
			nw := memnet.New(6)
			var lost atomic.Int32
			nw.SetFilter(func(p memnet.Packet) memnet.Verdict {
				if p.From == ar.dialer && frameType(p.Frame) == wire.FrameAuth {
					lost.Add(1)
					return memnet.Drop
				}
				return memnet.Deliver
			})
			d, l := hsPair(t, nw, ar.dialer)
			waitUntil(t, "three attempts lost their Auth", 10*time.Second, func() bool { return lost.Load() >= 3 })
			if d.linkTo("m") != nil || l.linkTo(ar.dialer) != nil {
				t.Fatal("a pipe became ready without its Auth")
			}
			// Freeze: no new attempt can connect. Every attempt in flight
			// must end by itself, on both sides.
			nw.Partition(ar.dialer, "m")
			waitUntil(t, "every attempt ended on both sides", 3*time.Second, func() bool {
				return nw.Conns(ar.dialer, "m") == 0 && d.handshaking() == 0 && l.handshaking() == 0 && d.intentIdle()
			})
			st, err := d.Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ps, _ := st.Peer("m"); ps.State != PeerNotConnected || ps.LastError == "" {
				t.Fatalf("dialer's view of m: %+v", ps)
			}
			if got := l.cnt.handshakeRejects.Load() + d.cnt.handshakeRejects.Load(); got != 0 {
				t.Fatalf("%d handshakes refused: the attempts must end by timeout, not by a refusal", got)
			}
			nw.SetFilter(nil)
			nw.Heal(ar.dialer, "m")
			waitUntil(t, "ready once the network recovers", 10*time.Second, func() bool { return settled(nw, d, l) })
		})
	}
}

// intentIdle reports whether every intent of n is without a pipe (between
// attempts). It asks the mesh actor through Status, which lists an intent
// with a pipe in flight as Connecting.
func (n *memNode) intentIdle() bool {
	st, err := n.Status(context.Background())
	if err != nil {
		return false
	}
	for _, p := range st.Peers {
		if p.State == PeerConnecting || p.State == PeerReady {
			return false
		}
	}
	return true
}
