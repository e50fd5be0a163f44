package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// adminTimeout bounds one status or weight request to the runtime.
const adminTimeout = 5 * time.Second

// maxDrainTimeout caps the timeout a POST /drain may ask for.
const maxDrainTimeout = 10 * time.Minute

// weightRequest is the body of POST /weight.
type weightRequest struct {
	Mesh    string `json:"mesh,omitempty"`
	Channel string `json:"channel"`
	Weight  *int   `json:"weight"`
}

// weightResponse answers POST /weight.
type weightResponse struct {
	Mesh    string `json:"mesh"`
	Channel string `json:"channel"`
	Weight  int    `json:"weight"`
}

// drainRequest is the optional body of POST /drain.
type drainRequest struct {
	Timeout string `json:"timeout,omitempty"`
}

// drainResponse answers POST /drain.
type drainResponse struct {
	Drained bool     `json:"drained"`
	Meshes  []string `json:"meshes"`
	Error   string   `json:"error,omitempty"`
}

// errorResponse is every admin error body. Config is true when the
// request was refused as a configuration error (e.g. weight out of range).
type errorResponse struct {
	Error string `json:"error"`
	// Code, when set, names the refusal (unauthorized, body_too_large,
	// bad_body, body_timeout, method_not_allowed).
	Code   string `json:"code,omitempty"`
	Config bool   `json:"config,omitempty"`
}

// handler returns the admin API with the default health settings.
func (a *app) handler() http.Handler { return a.routes(zlink.DefaultHealthConfig()) }

// routes returns the admin API; hc tunes /healthz and /readyz.
func (a *app) routes(hc zlink.HealthConfig) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(a), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	rt := newRouteTable(mux)
	rt.handleFunc("GET", "/status", a.getStatus)
	rt.handleFunc("GET", "/tree", a.getTree)
	rt.handleFunc("GET", "/spots", a.getSpots)
	// Endpoints that change the node need the admin token (when one is
	// configured); the read-only ones stay open.
	rt.handleFunc("POST", "/weight", a.requireToken(a.postWeight))
	rt.handleFunc("POST", "/drain", a.requireToken(longWrite(a.postDrainSpots)))
	rt.handleFunc("POST", "/undrain", a.requireToken(a.postUndrain))
	a.spotAdminRoutes(rt)
	rt.handle("GET", "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	rt.handleFunc("GET", "/healthz", a.getHealthz(hc))
	rt.handleFunc("GET", "/readyz", a.getReadyz(hc))
	rt.refuseOtherMethods()
	// The live dashboard (read-only, like /status).
	a.uiRoutes(mux)
	return limitBodies(mux)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, errorResponse{Error: err.Error(), Config: errors.Is(err, zlink.ErrConfig)})
}

func (a *app) meshOr(w http.ResponseWriter, r *http.Request, name string) (*routemesh.Node, bool) {
	n, err := a.mesh(name)
	switch {
	case errors.Is(err, errNotStarted):
		writeErr(w, http.StatusServiceUnavailable, err)
		return nil, false
	case err != nil:
		writeErr(w, http.StatusNotFound, err)
		return nil, false
	}
	return n, true
}

// status returns the Status of n with the built-in handler counters added.
func (a *app) status(ctx context.Context, n *routemesh.Node) (routemesh.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		return st, err
	}
	if st.Counters == nil {
		st.Counters = map[string]uint64{}
	}
	if bi := a.bis[n.Mesh()]; bi != nil {
		for k, v := range bi.counters() {
			st.Counters[k] = v
		}
	}
	return st, nil
}

// getStatus serves GET /status[?mesh=NAME] (default: the first mesh).
func (a *app) getStatus(w http.ResponseWriter, r *http.Request) {
	n, ok := a.meshOr(w, r, r.URL.Query().Get("mesh"))
	if !ok {
		return
	}
	st, err := a.status(r.Context(), n)
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// getTree serves GET /tree: the whole supervision tree of the process.
func (a *app) getTree(w http.ResponseWriter, _ *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, errNotStarted)
		return
	}
	writeJSON(w, http.StatusOK, h.Tree())
}

// postWeight serves POST /weight {"channel":..,"weight":..[,"mesh":..]}.
func (a *app) postWeight(w http.ResponseWriter, r *http.Request) {
	var req weightRequest
	if !readJSON(w, r, "weight", &req, false) {
		return
	}
	if req.Channel == "" || req.Weight == nil {
		writeErr(w, http.StatusBadRequest, errors.New(`weight: body needs "channel" and "weight"`))
		return
	}
	n, ok := a.meshOr(w, r, req.Mesh)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	if err := n.SetWeight(ctx, req.Channel, *req.Weight); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, zlink.ErrConfig) {
			code = http.StatusBadRequest
		}
		writeErr(w, code, err)
		return
	}
	writeJSON(w, http.StatusOK, weightResponse{Mesh: n.Mesh(), Channel: req.Channel, Weight: *req.Weight})
}

// postDrain serves POST /drain[?timeout=D]: drains every mesh and answers
// when drained (200) or when the timeout passes (504).
func (a *app) postDrain(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, errNotStarted)
		return
	}
	timeout := r.URL.Query().Get("timeout")
	if timeout == "" && r.ContentLength != 0 {
		var req drainRequest
		if !readJSON(w, r, "drain", &req, true) {
			return
		}
		timeout = req.Timeout
	}
	ctx := r.Context()
	if timeout == "" {
		// No timeout asked: the node's own drain timeout bounds the wait;
		// this bounds everything else (e.g. reaching a busy mesh actor).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxDrainTimeout)
		defer cancel()
	}
	if timeout != "" {
		d, err := time.ParseDuration(timeout)
		if err != nil || d <= 0 || d > maxDrainTimeout {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("drain: timeout %q: want a positive duration up to %s", timeout, maxDrainTimeout))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	resp := drainResponse{Drained: true, Meshes: []string{}}
	for _, n := range h.Meshes() {
		resp.Meshes = append(resp.Meshes, n.Mesh())
		if err := n.Drain(ctx); err != nil {
			resp.Drained = false
			resp.Error = fmt.Sprintf("mesh %s: %v", n.Mesh(), err)
			writeJSON(w, http.StatusGatewayTimeout, resp)
			return
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// healthResponse is the body of GET /healthz and GET /readyz: the
// process's health (zlink.Host.Health) and each mesh's state.
type healthResponse struct {
	Status  string            `json:"status"` // ok, starting, stopping, failed or not_ready
	Live    bool              `json:"live"`
	Ready   bool              `json:"ready"`
	Meshes  map[string]string `json:"meshes"`
	Reasons []string          `json:"reasons"`
}

// health evaluates the process for the probes.
func (a *app) health(ctx context.Context, hc zlink.HealthConfig) healthResponse {
	h := a.host.Load()
	switch {
	case a.stopping.Load():
		return healthResponse{Status: "stopping", Meshes: map[string]string{}, Reasons: []string{"process stopping"}}
	case h == nil:
		return healthResponse{Status: "starting", Live: true, Meshes: map[string]string{}, Reasons: []string{"process starting"}}
	}
	hl := h.Health(ctx, hc)
	resp := healthResponse{Status: "ok", Live: hl.Live, Ready: hl.Ready, Meshes: map[string]string{}, Reasons: hl.Reasons}
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
func (a *app) getHealthz(hc zlink.HealthConfig) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		resp := a.health(r.Context(), hc)
		code := http.StatusOK
		if !resp.Live {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, resp)
	}
}

// getReadyz serves GET /readyz: 200 only when the process may take traffic
// (zlink.Host.Health: every mesh ready, no required peer NotConnected past
// the grace, nothing failed); 503 otherwise, with the reasons.
func (a *app) getReadyz(hc zlink.HealthConfig) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		resp := a.health(r.Context(), hc)
		code := http.StatusOK
		if !resp.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, resp)
	}
}
