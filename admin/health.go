package admin

// GET /healthz and GET /readyz.

import (
	"context"
	"net/http"
)

// HealthResponse is the body of GET /healthz and GET /readyz: the
// process's health (zlink.Host.Health) and each mesh's state.
type HealthResponse struct {
	Status  string            `json:"status"` // ok, starting, stopping, failed or not_ready
	Live    bool              `json:"live"`
	Ready   bool              `json:"ready"`
	Meshes  map[string]string `json:"meshes"`
	Reasons []string          `json:"reasons"`
}

// health evaluates the process for the probes.
func (a *API) health(ctx context.Context) HealthResponse {
	h := a.host.Load()
	switch {
	case a.stopping():
		return HealthResponse{Status: "stopping", Meshes: map[string]string{}, Reasons: []string{"process stopping"}}
	case h == nil:
		return HealthResponse{Status: "starting", Live: true, Meshes: map[string]string{}, Reasons: []string{"process starting"}}
	}
	hl := h.Health(ctx, a.opts.Health)
	resp := HealthResponse{Status: "ok", Live: hl.Live, Ready: hl.Ready, Meshes: map[string]string{}, Reasons: hl.Reasons}
	for _, n := range h.Meshes() {
		resp.Meshes[n.Mesh()] = n.State().String()
	}
	switch {
	case !hl.Live:
		resp.Status = "failed"
	case !hl.Ready:
		resp.Status = "not_ready"
	}
	return resp
}

// getHealthz serves GET /healthz: 200 while the process is live (before and
// after ready, draining included); 503 when a MeshNode is Failed, a fanout
// publisher or subscriber failed for good, or the process is shutting
// down. The body says why.
func (a *API) getHealthz(w http.ResponseWriter, r *http.Request) {
	resp := a.health(r.Context())
	code := http.StatusOK
	if !resp.Live {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, resp)
}

// getReadyz serves GET /readyz: 200 only when the process may take traffic
// (zlink.Host.Health: every mesh ready, no required peer NotConnected past
// the grace, nothing failed); 503 otherwise, with the reasons.
func (a *API) getReadyz(w http.ResponseWriter, r *http.Request) {
	resp := a.health(r.Context())
	code := http.StatusOK
	if !resp.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, resp)
}
