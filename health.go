package zlink

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// DefaultPeerGrace is how long a required peer may stay NotConnected before
// the process stops being ready: a little more than three liveness
// last-heard periods at the default settings, so that one lost peer
// reconnecting with backoff does not flap readiness.
const DefaultPeerGrace = 10 * time.Second

// HealthConfig tunes Host.Health. The zero value takes every default.
type HealthConfig struct {
	// PeerGrace is how long a required peer may be NotConnected (measured
	// from PeerStatus.Since) before readiness fails. Default
	// DefaultPeerGrace; a negative value means no grace (fail at once).
	PeerGrace time.Duration
	// StatusTimeout bounds the status request to each MeshNode. Default 2s.
	StatusTimeout time.Duration
}

// DefaultHealthConfig returns the defaults documented on HealthConfig.
func DefaultHealthConfig() HealthConfig {
	return HealthConfig{PeerGrace: DefaultPeerGrace, StatusTimeout: 2 * time.Second}
}

func (c HealthConfig) withDefaults() HealthConfig {
	d := DefaultHealthConfig()
	switch {
	case c.PeerGrace == 0:
		c.PeerGrace = d.PeerGrace
	case c.PeerGrace < 0:
		c.PeerGrace = 0
	}
	if c.StatusTimeout <= 0 {
		c.StatusTimeout = d.StatusTimeout
	}
	return c
}

// Health is the process's answer to "is it alive" and "may it take
// traffic", with the reasons when it is not.
//
// Live is false when a MeshNode is Failed or a fanout publisher or
// subscriber failed for good: the process cannot recover by itself and
// should be restarted. Ready is false when it is not live, when a MeshNode
// is starting, draining, stopping or stopped, or when a required peer has
// been NotConnected for longer than HealthConfig.PeerGrace. NotRequired
// peers never count. Reasons lists every cause, one line each, in a stable
// order; it is empty when Live and Ready are true.
type Health struct {
	Live    bool     `json:"live"`
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
}

// Health evaluates the process now: the state and peers of every MeshNode
// and the fanout registrations. It asks each MeshNode for its status
// (bounded by cfg.StatusTimeout and ctx); a node that cannot answer is not
// ready. Safe for concurrent use.
func (h *Host) Health(ctx context.Context, cfg HealthConfig) Health {
	cfg = cfg.withDefaults()
	meshes := make([]meshHealth, 0, len(h.order))
	for _, n := range h.Meshes() {
		mh := meshHealth{Mesh: n.Mesh(), State: n.State()}
		if mh.State == routemesh.NodeReady {
			sctx, cancel := context.WithTimeout(ctx, cfg.StatusTimeout)
			st, err := n.Status(sctx)
			cancel()
			if err != nil {
				mh.StatusErr = err
			} else {
				mh.State, mh.Peers = st.State, st.Peers
			}
		}
		meshes = append(meshes, mh)
	}
	return evaluateHealth(time.Now(), cfg.PeerGrace, meshes, h.fanoutHealth())
}

// meshHealth is what the health decision needs of one MeshNode.
type meshHealth struct {
	Mesh      string
	State     routemesh.NodeState
	Peers     []routemesh.PeerStatus
	StatusErr error // the status request failed; Peers is unknown
}

// fanoutHealth is one failed fanout publisher or subscriber.
type fanoutHealth struct {
	Channel string
	Role    string // "publisher" or "subscriber"
	Err     error
}

// evaluateHealth is the health decision: pure, over the nodes' states and
// peers, the failed fanout registrations and now.
func evaluateHealth(now time.Time, grace time.Duration, meshes []meshHealth, fanouts []fanoutHealth) Health {
	h := Health{Live: true, Ready: true, Reasons: []string{}}
	notReady := func(format string, args ...any) {
		h.Ready = false
		h.Reasons = append(h.Reasons, fmt.Sprintf(format, args...))
	}
	for _, m := range meshes {
		switch m.State {
		case routemesh.NodeReady:
		case routemesh.NodeFailed:
			h.Live = false
			notReady("mesh %s: failed (its actors could not be recovered)", m.Mesh)
			continue
		default:
			notReady("mesh %s: %s", m.Mesh, m.State)
			continue
		}
		if m.StatusErr != nil {
			notReady("mesh %s: no status: %v", m.Mesh, m.StatusErr)
			continue
		}
		for _, p := range m.Peers {
			if p.State != routemesh.PeerNotConnected {
				continue // NotRequired is never a failure; Connecting is progress
			}
			down := now.Sub(p.Since)
			if down <= grace {
				continue
			}
			r := fmt.Sprintf("mesh %s: peer %s NotConnected for %s (grace %s)", m.Mesh, peerName(p), down.Round(time.Millisecond), grace)
			if p.LastError != "" {
				r += ": " + p.LastError
			}
			notReady("%s", r)
		}
	}
	for _, f := range fanouts {
		h.Live = false
		notReady("fanout %s %s: failed: %v", f.Channel, f.Role, f.Err)
	}
	return h
}

// peerName names a peer in a reason: its RID, its endpoint, or both.
func peerName(p routemesh.PeerStatus) string {
	switch {
	case p.RID == "":
		return p.Endpoint
	case p.Endpoint == "":
		return p.RID
	default:
		return p.RID + " (" + p.Endpoint + ")"
	}
}
