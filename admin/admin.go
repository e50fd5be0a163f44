package admin

import (
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
