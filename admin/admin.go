package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// adminTimeout bounds one status or weight request to the runtime.
const adminTimeout = 5 * time.Second

// MaxDrainTimeout caps the timeout a POST /drain, /relocate or
// /spots/move may ask for.
const MaxDrainTimeout = 10 * time.Minute

// MinTokenBytes is the shortest admin token Options.Token may hold: a
// shorter one would be guessable.
const MinTokenBytes = 16

// Options configures the admin API. The zero value serves every endpoint
// at the root of the handler, mutating ones included, to loopback clients
// only (see Options.Token).
type Options struct {
	// Token, when set, is the bearer token (Authorization: Bearer …) every
	// endpoint that changes the node needs: weight, drain, undrain,
	// relocate, spots/move. At least MinTokenBytes bytes. Without one, no
	// endpoint is served to a request whose Host is not loopback,
	// localhost or in AllowedHosts (DNS rebinding).
	Token []byte
	// ProtectReads makes every read endpoint but the health probes
	// (/healthz, /readyz) need the token too: /status, /tree, /spots and
	// /spots/owner show the mesh's topology, /metrics and /ui their
	// numbers. Needs Token.
	ProtectReads bool
	// Prefix is the path the handler is mounted under in an existing mux
	// ("/zlink": the API answers /zlink/status, /zlink/ui/ …). Empty: the
	// root. It must start with '/' and not end with one.
	Prefix string
	// ReadOnly refuses every endpoint that changes the node (403,
	// code read_only), token or not.
	ReadOnly bool
	// Logger receives what the mutating endpoints did (info) and refused
	// (warn). Default: the zero Logger, which logs nothing.
	Logger zerolog.Logger
	// Pprof serves the Go runtime profiles under /debug/pprof/ (profile,
	// trace, heap, goroutine, allocs, block, mutex, threadcreate). Like
	// the mutating endpoints they need the token when one is set.
	Pprof bool
	// Health tunes /healthz and /readyz. The zero value takes every
	// default.
	Health zlink.HealthConfig
	// AllowedOrigins are the browser origins ("https://ops.example:8443")
	// allowed to send a mutating request besides the admin's own (the
	// scheme and Host of the request). A request with any other Origin
	// header is refused (403, code origin).
	AllowedOrigins []string
	// AllowedHosts are the Host header values (without port) a request
	// may carry, besides loopback addresses and localhost, when no Token
	// is set. With a Token every Host is served.
	AllowedHosts []string
	// Counters, when set, adds counters of the embedder's own to the
	// counters of /status (and /ui) of each mesh. It must not block.
	Counters func(mesh string) map[string]uint64
	// Collectors are registered on /metrics beside the runtime's.
	Collectors []prometheus.Collector
}

// validate refuses options that cannot be served.
func (o Options) validate() error {
	switch {
	case len(o.Token) > 0 && len(o.Token) < MinTokenBytes:
		return fmt.Errorf("%w: the admin token is %d bytes; use at least %d", ErrOptions, len(o.Token), MinTokenBytes)
	case o.ProtectReads && len(o.Token) == 0:
		return fmt.Errorf("%w: ProtectReads needs a Token", ErrOptions)
	case o.Prefix != "" && (!strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/")):
		return fmt.Errorf("%w: prefix %q: want /NAME[/NAME…], without a trailing slash", ErrOptions, o.Prefix)
	}
	return nil
}

// Errors of the package, matched with errors.Is.
var (
	// ErrOptions: New or Handler was given options it cannot serve.
	ErrOptions = errors.New("zlink: admin options")
	// ErrNotStarted: the API has no host yet (API.SetHost not called).
	ErrNotStarted = errors.New("zlink: node not started yet")
	// ErrUnknownMesh: ?mesh=NAME names no mesh of the host.
	ErrUnknownMesh = errors.New("zlink: no such mesh on this node")
)

// API is the admin HTTP API of one process. It serves before its host
// exists (/healthz then says starting) so that a process can bind its
// admin address first; SetHost publishes the host, MarkStopping the
// shutdown. Safe for concurrent use.
type API struct {
	opts    Options
	log     zerolog.Logger
	host    atomic.Pointer[zlink.Host]
	stop    atomic.Bool
	handler http.Handler
}

// Handler returns the admin API of a started host. It panics on options
// New refuses (a programming error); use New to get the error instead.
func Handler(host *zlink.Host, opts Options) http.Handler {
	a, err := New(opts)
	if err != nil {
		panic(err)
	}
	a.SetHost(host)
	return a
}

// New returns the admin API with no host yet.
func New(opts Options) (*API, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	a := &API{opts: opts, log: opts.Logger}
	a.handler = a.routes()
	return a, nil
}

// SetHost publishes the running host to the endpoints.
func (a *API) SetHost(h *zlink.Host) { a.host.Store(h) }

// MarkStopping tells the endpoints the process is shutting down:
// /healthz and /readyz answer 503 stopping, /undrain is refused, /ui
// streams end after saying so.
func (a *API) MarkStopping() { a.stop.Store(true) }

func (a *API) stopping() bool { return a.stop.Load() }

// ServeHTTP serves one admin request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// routes returns the admin API: every endpoint behind the request guards.
func (a *API) routes() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.collectors()...)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range a.opts.Collectors {
		reg.MustRegister(c)
	}
	mux := http.NewServeMux()
	rt := newRouteTable(mux)
	rt.handleFunc("GET", "/status", a.read(a.getStatus))
	rt.handleFunc("GET", "/tree", a.read(a.getTree))
	rt.handleFunc("GET", "/spots", a.read(a.getSpots))
	rt.handleFunc("GET", "/spots/owner", a.read(a.getSpotOwner))
	rt.handleFunc("GET", "/spots/reminders", a.read(a.getSpotReminders))
	// Endpoints that change the node: the token (when one is configured),
	// the cross-site checks, refused in read-only mode.
	rt.handleFunc("POST", "/weight", a.mutating(a.postWeight))
	rt.handleFunc("POST", "/drain", a.mutating(longWrite(a.postDrain)))
	rt.handleFunc("POST", "/undrain", a.mutating(a.postUndrain))
	rt.handleFunc("POST", "/relocate", a.mutating(longWrite(a.postRelocate)))
	rt.handleFunc("POST", "/spots/move", a.mutating(longWrite(a.postSpotMove)))
	rt.handleFunc("POST", "/spots/reminders", a.mutating(a.postSpotReminder))
	rt.handleFunc("POST", "/spots/reminders/cancel", a.mutating(a.postSpotReminderCancel))
	rt.handle("GET", "/metrics", a.read(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP))
	rt.handleFunc("GET", "/healthz", a.getHealthz)
	rt.handleFunc("GET", "/readyz", a.getReadyz)
	if a.opts.Pprof {
		a.pprofRoutes(rt)
	}
	rt.refuseOtherMethods()
	// The live dashboard (read-only, like /status).
	a.uiRoutes(mux)
	var h http.Handler = mux
	if a.opts.Prefix != "" {
		h = stripPrefix(a.opts.Prefix, mux)
	}
	return a.guardHost(limitBodies(h))
}

// stripPrefix serves the API under prefix; any other path is 404.
func stripPrefix(prefix string, next http.Handler) http.Handler {
	strip := http.StripPrefix(prefix, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix+"/") {
			writeErrCode(w, http.StatusNotFound, "not_found", fmt.Errorf("admin: %s is outside %s/", r.URL.Path, prefix))
			return
		}
		strip.ServeHTTP(w, r)
	})
}

// WeightRequest is the body of POST /weight.
type WeightRequest struct {
	Mesh    string `json:"mesh,omitempty"`
	Channel string `json:"channel"`
	Weight  *int   `json:"weight"`
}

// WeightResponse answers POST /weight.
type WeightResponse struct {
	Mesh    string `json:"mesh"`
	Channel string `json:"channel"`
	Weight  int    `json:"weight"`
}

// DrainRequest is the optional body of POST /drain.
type DrainRequest struct {
	Timeout string `json:"timeout,omitempty"`
}

// DrainResponse answers POST /drain: drained or not, the meshes, and the
// Spots the drain handed to other Object Servers (the Spot runtime moves
// every persistent Spot away during Drain), summed over the meshes.
type DrainResponse struct {
	Drained    bool     `json:"drained"`
	Meshes     []string `json:"meshes"`
	Error      string   `json:"error,omitempty"`
	MovedSpots uint64   `json:"moved_spots"`
}

// UndrainResponse answers POST /undrain.
type UndrainResponse struct {
	Undrained bool     `json:"undrained"`
	Meshes    []string `json:"meshes"`
	Error     string   `json:"error,omitempty"`
}

// ErrorResponse is every admin error body. Config is true when the
// request was refused as a configuration error (e.g. weight out of range).
type ErrorResponse struct {
	Error string `json:"error"`
	// Code, when set, names the refusal in lower_snake (unauthorized,
	// forbidden_host, forbidden_origin, content_type, read_only,
	// body_too_large, bad_body, body_timeout, method_not_allowed, and
	// those of the Spot endpoints).
	Code   string `json:"code,omitempty"`
	Config bool   `json:"config,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, ErrorResponse{Error: err.Error(), Config: errors.Is(err, zlink.ErrConfig)})
}

// mesh returns the MeshNode named name ("" = the first).
func (a *API) mesh(name string) (*routemesh.Node, error) {
	h := a.host.Load()
	if h == nil {
		return nil, ErrNotStarted
	}
	if name == "" {
		return h.Meshes()[0], nil
	}
	if n := h.Mesh(name); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownMesh, name)
}

func (a *API) meshOr(w http.ResponseWriter, name string) (*routemesh.Node, bool) {
	n, err := a.mesh(name)
	switch {
	case errors.Is(err, ErrNotStarted):
		writeErr(w, http.StatusServiceUnavailable, err)
		return nil, false
	case err != nil:
		writeErr(w, http.StatusNotFound, err)
		return nil, false
	}
	return n, true
}

// status returns the Status of n with the embedder's counters added.
func (a *API) status(ctx context.Context, n *routemesh.Node) (routemesh.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		return st, err
	}
	if st.Counters == nil {
		st.Counters = map[string]uint64{}
	}
	if a.opts.Counters != nil {
		for k, v := range a.opts.Counters(n.Mesh()) {
			st.Counters[k] = v
		}
	}
	return st, nil
}

// getStatus serves GET /status[?mesh=NAME] (default: the first mesh), with
// the Location Store's counters.
func (a *API) getStatus(w http.ResponseWriter, r *http.Request) {
	n, ok := a.meshOr(w, r.URL.Query().Get("mesh"))
	if !ok {
		return
	}
	st, err := a.status(r.Context(), n)
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, StatusResponse{Status: st, Store: storeStats(n.Store())})
}

// getTree serves GET /tree: the whole supervision tree of the process.
func (a *API) getTree(w http.ResponseWriter, _ *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	}
	writeJSON(w, http.StatusOK, h.Tree())
}

// postWeight serves POST /weight {"channel":..,"weight":..[,"mesh":..]}.
func (a *API) postWeight(w http.ResponseWriter, r *http.Request) {
	var req WeightRequest
	if !readJSON(w, r, "weight", &req, false) {
		return
	}
	if req.Channel == "" || req.Weight == nil {
		writeErr(w, http.StatusBadRequest, errors.New(`weight: body needs "channel" and "weight"`))
		return
	}
	n, ok := a.meshOr(w, req.Mesh)
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
	a.log.Info().Str("mesh", n.Mesh()).Str("channel", req.Channel).Int("weight", *req.Weight).Msg("admin: weight set")
	writeJSON(w, http.StatusOK, WeightResponse{Mesh: n.Mesh(), Channel: req.Channel, Weight: *req.Weight})
}

// postDrain serves POST /drain[?timeout=D]: drains every mesh and answers
// when drained (200) or when the timeout passes (504), with the Spots the
// drain moved (spot.Stats.Moves before and after; a move the node made
// for another reason meanwhile counts too).
func (a *API) postDrain(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	if h == nil {
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	}
	timeout := r.URL.Query().Get("timeout")
	if timeout == "" && r.ContentLength != 0 {
		var req DrainRequest
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
		ctx, cancel = context.WithTimeout(ctx, MaxDrainTimeout)
		defer cancel()
	}
	if timeout != "" {
		d, err := time.ParseDuration(timeout)
		if err != nil || d <= 0 || d > MaxDrainTimeout {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("drain: timeout %q: want a positive duration up to %s", timeout, MaxDrainTimeout))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	before := spotMoves(h.Meshes())
	resp := DrainResponse{Drained: true, Meshes: []string{}}
	code := http.StatusOK
	for _, n := range h.Meshes() {
		resp.Meshes = append(resp.Meshes, n.Mesh())
		if err := n.Drain(ctx); err != nil {
			resp.Drained = false
			resp.Error = fmt.Sprintf("mesh %s: %v", n.Mesh(), err)
			code = http.StatusGatewayTimeout
			break
		}
	}
	resp.MovedSpots = spotMoves(h.Meshes()) - before
	ev := a.log.Info()
	if !resp.Drained {
		ev = a.log.Warn().Str("error", resp.Error)
	}
	ev.Bool("drained", resp.Drained).Uint64("moved_spots", resp.MovedSpots).Msg("admin: drain")
	writeJSON(w, code, resp)
}

// postUndrain serves POST /undrain: every mesh of the node returns to new
// selection (undoes a drain) without a restart. 409 while the process is
// shutting down (its drain is part of the shutdown).
func (a *API) postUndrain(w http.ResponseWriter, r *http.Request) {
	h := a.host.Load()
	switch {
	case h == nil:
		writeErr(w, http.StatusServiceUnavailable, ErrNotStarted)
		return
	case a.stopping():
		writeErr(w, http.StatusConflict, fmt.Errorf("undrain: the process is shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	resp := UndrainResponse{Undrained: true, Meshes: []string{}}
	for _, n := range h.Meshes() {
		resp.Meshes = append(resp.Meshes, n.Mesh())
		if err := n.Undrain(ctx); err != nil {
			resp.Undrained = false
			resp.Error = fmt.Sprintf("mesh %s: %v", n.Mesh(), err)
			writeJSON(w, http.StatusConflict, resp)
			return
		}
	}
	a.log.Info().Strs("meshes", resp.Meshes).Msg("admin: undrained")
	writeJSON(w, http.StatusOK, resp)
}

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
