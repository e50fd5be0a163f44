package zlink

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

func TestEvaluateHealth(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const grace = 10 * time.Second
	peer := func(rid string, st routemesh.PeerState, ago time.Duration) routemesh.PeerStatus {
		return routemesh.PeerStatus{RID: rid, State: st, Since: now.Add(-ago), Endpoint: "tcp://127.0.0.1:1", LastError: "connection refused"}
	}
	ready := func(peers ...routemesh.PeerStatus) meshHealth {
		return meshHealth{Mesh: "game", State: routemesh.NodeReady, Peers: peers}
	}
	tests := []struct {
		name        string
		meshes      []meshHealth
		fanouts     []fanoutHealth
		live, ready bool
		reasons     []string // substrings, one per reason, in order
	}{
		{name: "no meshes", live: true, ready: true},
		{name: "ready with ready peers", meshes: []meshHealth{ready(peer("b", routemesh.PeerReady, time.Hour), peer("c", routemesh.PeerDraining, 0))}, live: true, ready: true},
		{name: "starting", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeStarting}}, live: true, reasons: []string{"mesh game: starting"}},
		{name: "draining", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeDraining}}, live: true, reasons: []string{"mesh game: draining"}},
		{name: "stopping", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeStopping}}, live: true, reasons: []string{"mesh game: stopping"}},
		{name: "stopped", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeStopped}}, live: true, reasons: []string{"mesh game: stopped"}},
		{name: "failed", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeFailed}}, reasons: []string{"mesh game: failed"}},
		{name: "one failed of two", meshes: []meshHealth{ready(), {Mesh: "lobby", State: routemesh.NodeFailed}}, reasons: []string{"mesh lobby: failed"}},
		{name: "status unavailable", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeReady, StatusErr: errors.New("timeout")}}, live: true, reasons: []string{"mesh game: no status: timeout"}},
		{name: "NotConnected within grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, grace-time.Millisecond))}, live: true, ready: true},
		{name: "NotConnected exactly at grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, grace))}, live: true, ready: true},
		{name: "NotConnected past grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, grace+time.Second))}, live: true,
			reasons: []string{"mesh game: peer b (tcp://127.0.0.1:1) NotConnected for 11s (grace 10s): connection refused"}},
		{name: "NotRequired ignored however old", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotRequired, 24*time.Hour))}, live: true, ready: true},
		{name: "Connecting ignored", meshes: []meshHealth{ready(peer("b", routemesh.PeerConnecting, time.Hour))}, live: true, ready: true},
		{name: "two peers past grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, time.Minute), peer("c", routemesh.PeerNotRequired, time.Minute), peer("d", routemesh.PeerNotConnected, time.Minute))},
			live: true, reasons: []string{"peer b", "peer d"}},
		{name: "fanout failed", meshes: []meshHealth{ready()}, fanouts: []fanoutHealth{{Channel: "news", Role: "publisher", Err: errors.New("rebind: address in use")}},
			reasons: []string{"fanout news publisher: failed: rebind: address in use"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := evaluateHealth(now, grace, tc.meshes, tc.fanouts)
			if h.Live != tc.live || h.Ready != tc.ready {
				t.Fatalf("live=%v ready=%v, want live=%v ready=%v; reasons %q", h.Live, h.Ready, tc.live, tc.ready, h.Reasons)
			}
			if h.Reasons == nil || len(h.Reasons) != len(tc.reasons) {
				t.Fatalf("reasons %q, want %d like %q", h.Reasons, len(tc.reasons), tc.reasons)
			}
			for i, want := range tc.reasons {
				if !strings.Contains(h.Reasons[i], want) {
					t.Fatalf("reason %d = %q, want it to contain %q", i, h.Reasons[i], want)
				}
			}
			if !h.Live && h.Ready {
				t.Fatal("ready while not live")
			}
		})
	}
}

func TestHealthConfig_Defaults(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
	}{{0, DefaultPeerGrace}, {-1, 0}, {time.Second, time.Second}} {
		if got := (HealthConfig{PeerGrace: tc.in}).withDefaults().PeerGrace; got != tc.want {
			t.Fatalf("PeerGrace %v → %v, want %v", tc.in, got, tc.want)
		}
	}
	if !slices.Equal(evaluateHealth(time.Now(), 0, nil, nil).Reasons, []string{}) {
		t.Fatal("reasons must be an empty list, not null")
	}
}
