package benchrun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/test/fault"
)

// faultSpotsConfig: a killed owner's Spots are claimable about a second
// after its last renewal.
var faultSpotsConfig = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}

// spotsTrack follows the replies of a Spot load: the latest owner per
// Spot, which owner answered each (Spot, epoch), and when each Spot of a
// killed owner was first answered by another.
type spotsTrack struct {
	mu        sync.Mutex
	last      map[string]string            // id → owner of the latest reply
	epochs    map[string]map[uint64]string // id → epoch → owner
	conflicts []string                     // (Spot, epoch) answered by two owners
	killed    string
	killAt    time.Time
	rehomed   map[string]time.Duration // id → first reply elsewhere after the kill
}

func (s *spotsTrack) record(id string, issued time.Time, res spot.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[id] = res.Owner
	if s.epochs[id] == nil {
		s.epochs[id] = map[uint64]string{}
	}
	if o, ok := s.epochs[id][res.Epoch]; ok && o != res.Owner {
		s.conflicts = append(s.conflicts, fmt.Sprintf("%s@%d by %s and %s", id, res.Epoch, o, res.Owner))
	}
	s.epochs[id][res.Epoch] = res.Owner
	if s.killed != "" && res.Owner != s.killed && issued.After(s.killAt) {
		if _, ok := s.rehomed[id]; !ok {
			s.rehomed[id] = time.Since(s.killAt)
		}
	}
}

// ownedBy lists the Spots last answered by rid, and how many Spots were
// answered at all.
func (s *spotsTrack) ownedBy(rid string) (ids []string, answered int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, o := range s.last {
		if o == rid {
			ids = append(ids, id)
		}
	}
	return ids, len(s.last)
}

func newSpotsTrack() *spotsTrack {
	return &spotsTrack{last: map[string]string{}, epochs: map[string]map[uint64]string{}, rehomed: map[string]time.Duration{}}
}

// faultSpotsNode starts a node of the fault mesh with the Spot runtime
// (cfg) and the given Object role and kinds, on store.
func faultSpotsNode(r *faultRig, store location.Store, cfg spot.Config, prefix string, role routemesh.ObjectRole, kinds ...spot.Registration) (*routemesh.Node, error) {
	o := zlink.NewOptions().SetLocationStore(store)
	b := o.AddRouteMesh(faultMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(faultLiveness).
		ConfigureDiscovery(faultDiscovery).SetObjectRole(role)
	spot.EnableWith(b, cfg, kinds...)
	h, err := r.host(o)
	if err != nil {
		return nil, err
	}
	return h.Mesh(faultMesh), nil
}

// waitPeersReady waits until cl holds a ready connection to every rid.
func waitPeersReady(ctx context.Context, what string, cl *routemesh.Node, rids ...string) error {
	return waitUntil(ctx, what, 15*time.Second, func() bool {
		for _, rid := range rids {
			if ready, _ := cl.PeerReady(rid); !ready {
				return false
			}
		}
		return true
	})
}

// spotIDs names n Spots prefix-0 … prefix-(n-1).
func spotIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return ids
}

// startSpotsFaultLoad calls random Spots of ids from cl on 8 workers (3 s
// per call), every reply recorded in tr.
func startSpotsFaultLoad(cl *routemesh.Node, ids []string, tr *spotsTrack) *fault.Ledger {
	payload := make([]byte, spotsPayloadSize)
	return startFaultCalls(8, 3*time.Second, func(ctx context.Context) (string, error) {
		id := ids[rand.IntN(len(ids))]
		issued := time.Now()
		_, res, err := spot.CallRaw(ctx, cl, spotsKind, id, spotsPacket, payload)
		if err == nil {
			tr.record(id, issued, res)
		}
		return res.Owner, err
	})
}

func runKill9Spots(ctx context.Context, r *faultRig, _ bool) (out faultOutcome, err error) {
	srv, err := faultRedis(r)
	if err != nil {
		return out, err
	}
	store, err := faultStore(r, srv.Addr())
	if err != nil {
		return out, err
	}
	spotsNode := func(prefix string, role routemesh.ObjectRole, kinds ...spot.Registration) (*routemesh.Node, error) {
		return faultSpotsNode(r, store, faultSpotsConfig, prefix, role, kinds...)
	}
	child, err := startFaultChild(r, "ZLINK_FAULTS_REDIS="+srv.Addr(), "ZLINK_FAULTS_PREFIX=osK", "ZLINK_FAULTS_SPOTS=1")
	if err != nil {
		return out, err
	}
	a, err := spotsNode("osA", routemesh.ObjectServer, spotsBenchKind())
	if err != nil {
		return out, err
	}
	cl, err := spotsNode("oc", routemesh.ObjectClient)
	if err != nil {
		return out, err
	}
	if err := waitPeersReady(ctx, "the client placing Spots on both Object Servers", cl, a.RID(), child.rid); err != nil {
		return out, err
	}
	ids := spotIDs("fk", 64)
	tr := newSpotsTrack()
	out.base, out.heap = baseline()
	out.load = startSpotsFaultLoad(cl, ids, tr)
	var victims []string
	if err := waitUntil(ctx, "every Spot answered, some by the child", 15*time.Second, func() bool {
		var n int
		victims, n = tr.ownedBy(child.rid)
		return n == len(ids) && len(victims) > 0
	}); err != nil {
		return out, err
	}
	tr.mu.Lock()
	tr.killed, tr.killAt = child.rid, time.Now()
	tr.mu.Unlock()
	killAt := tr.killAt
	child.Kill()
	if err := waitUntil(ctx, "the client losing the killed Object Server", 15*time.Second, func() bool {
		ready, _ := cl.PeerReady(child.rid)
		return !ready
	}); err != nil {
		return out, err
	}
	out.detect = time.Since(killAt)
	if err := waitUntil(ctx, "every Spot of the killed Object Server answered elsewhere", 20*time.Second, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.rehomed) >= len(victims)
	}); err != nil {
		return out, err
	}
	out.load.Mark()
	if err := waitUntil(ctx, "more calls answered after the re-home", 10*time.Second, func() bool { return out.load.Since(a.RID()) > 2*len(ids) }); err != nil {
		return out, err
	}
	out.load.Stop()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.conflicts) > 0 {
		return out, fmt.Errorf("%d (Spot, epoch) answered by two owners, first %s", len(tr.conflicts), tr.conflicts[0])
	}
	times := make([]time.Duration, 0, len(tr.rehomed))
	for _, id := range victims {
		times = append(times, tr.rehomed[id])
	}
	slices.Sort(times)
	out.recover = times[len(times)-1]
	out.note = fmt.Sprintf("spots=%d on_killed=%d rehome_median=%v lease_ttl=%v (recover: the last Spot of the killed owner answered elsewhere, after the kill)",
		len(ids), len(victims), times[len(times)/2].Round(time.Millisecond), faultSpotsConfig.LeaseTTL)
	return out, nil
}
